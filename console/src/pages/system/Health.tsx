import { api } from '../../api/client.ts'
import type { ResponseOf } from '../../api/ops.ts'
import { Button, ErrorBanner, Page, Spinner, Table, useAsync } from '../../ui/index.ts'

/* The whole platform's health (GET /api/v1/system/health): status, warnings, services, the host. */
type Report = ResponseOf<'system.health.report'>

const pct = (v: number | null | undefined) => (v === null || v === undefined ? '—' : `${v.toFixed(0)} %`)
const gb = (v: number | null | undefined) => (v === null || v === undefined ? '—' : `${(v / 1e9).toFixed(1)} GB`)

export default function HealthPage() {
  const r = useAsync((signal) => api<Report>('GET', '/system/health', { signal }), [])
  const h = r.data
  return (
    <Page title="Health" actions={<Button onClick={r.reload}>Check again</Button>}>
      <ErrorBanner error={r.error} />
      {h === undefined ? (
        r.loading ? (
          <Spinner />
        ) : null
      ) : (
        <>
          <p>
            Status: <strong className={`status status-${h.status}`}>{h.status}</strong>{' '}
            <span className="muted">
              (checked {new Date(h.checked_at).toLocaleTimeString()} in {h.duration_ms} ms)
            </span>
          </p>
          {h.warnings.length === 0 ? (
            <p className="muted">No warnings.</p>
          ) : (
            <ul className="warnings" aria-label="Warnings">
              {h.warnings.map((w, i) => (
                <li key={i}>
                  <strong>{w.level}</strong> {w.service === undefined ? '' : `${w.service}: `}
                  {w.message}
                </li>
              ))}
            </ul>
          )}
          <h2>Services</h2>
          <Table
            caption="Services"
            rows={h.services}
            rowKey={(s) => s.name}
            columns={[
              { key: 'name', label: 'Service', render: (s) => s.name },
              { key: 'status', label: 'Status', render: (s) => s.status },
              { key: 'health', label: 'Health', render: (s) => s.health },
              { key: 'version', label: 'Version', render: (s) => s.version ?? '—' },
              {
                key: 'instances',
                label: 'Instances',
                render: (s) => (s.instances === null ? '—' : String(s.instances)),
              },
              { key: 'reason', label: 'Reason', render: (s) => s.reason ?? '' },
            ]}
          />
          <h2>Host {h.host.hostname}</h2>
          <dl className="fields">
            <div className="field-row">
              <dt>CPU</dt>
              <dd>
                {h.host.cpu.count} cores, load {h.host.cpu.load_1m.toFixed(2)} / {h.host.cpu.load_5m.toFixed(2)} /{' '}
                {h.host.cpu.load_15m.toFixed(2)}, used {pct(h.host.cpu.used_percent)}
              </dd>
            </div>
            <div className="field-row">
              <dt>Memory</dt>
              <dd>
                {gb(h.host.memory.available_bytes)} free of {gb(h.host.memory.total_bytes)} (used{' '}
                {pct(h.host.memory.used_percent)})
              </dd>
            </div>
            <div className="field-row">
              <dt>Disk {h.host.disk.path}</dt>
              <dd>
                {gb(h.host.disk.available_bytes)} free of {gb(h.host.disk.total_bytes)} (used{' '}
                {pct(h.host.disk.used_percent)})
              </dd>
            </div>
          </dl>
        </>
      )}
    </Page>
  )
}
