import { removeTempDir, startPlatformChild, tempDir, type ServerChild } from './lib/children.ts'
import { childPids } from './lib/cpu.ts'
import { expectOk, measure, type LoadTarget, type Measurement } from './lib/load.ts'
import { measureSequential } from './lib/sequential.ts'
import type { Benchmark, Row } from './lib/types.ts'

/*
 * Components (issue 16's targets), in one platform process (ROLES=all, its own nats-server and
 * Postgres):
 *   compile   POST /api/v1/components/bench/board/compile, one at a time    esbuild of a ~300-line JSX source (target p50 ≤ 200 ms)
 *   baseline  GET /api/v1/agents/default/default                             the resource read of gateway.bench.ts
 *   render    GET /components/bench/board/render                             the compiled component as a page (target ≤ 2× the read's CPU and latency)
 * Render and read are measured under load (autocannon, 50 connections: CPU per request) and one at
 * a time (latency). Render serves the bundle compiled once before (kept in memory) and seals the
 * page's view ticket, as every render does.
 */
const NAME = 'components'

/** A ~300-line component of the usual kind: state, effects, a proxy call, a table, a form, small parts. */
export function boardSource(): string {
  const parts: string[] = [
    "import { useEffect, useMemo, useState } from 'react'",
    "import { query, execute } from 'platform-ui'",
    '',
    'type Order = { id: string; customer: string; total: number; status: string; region: string }',
    "type Sort = { key: keyof Order; dir: 'asc' | 'desc' }",
    '',
  ]
  const widgets = [
    'Revenue',
    'Orders',
    'Customers',
    'Refunds',
    'Backlog',
    'Shipped',
    'Returns',
    'Margin',
    'Visits',
    'Signups',
    'Churn',
    'Tickets',
    'Stock',
    'Leads',
    'Invoices',
    'Payouts',
  ]
  for (const w of widgets) {
    parts.push(
      `function ${w}Card({ orders }: { orders: Order[] }) {`,
      `  const value = useMemo(() => orders.reduce((n, o) => n + (o.status === '${w.toLowerCase()}' ? o.total : 1), 0), [orders])`,
      '  const [open, setOpen] = useState(false)',
      '  return (',
      `    <section className="card card-${w.toLowerCase()}">`,
      `      <h2 onClick={() => setOpen(!open)}>${w}</h2>`,
      '      <p className="value">{value.toLocaleString()}</p>',
      `      {open && <p className="detail">${w} over {orders.length} orders</p>}`,
      '    </section>',
      '  )',
      '}',
      '',
    )
  }
  parts.push(
    'function Row({ o, onPick }: { o: Order; onPick: (id: string) => void }) {',
    '  return (',
    '    <tr onClick={() => onPick(o.id)} className={o.status}>',
    '      <td>{o.id}</td>',
    '      <td>{o.customer}</td>',
    '      <td>{o.region}</td>',
    '      <td className="num">{o.total.toFixed(2)}</td>',
    '      <td>{o.status}</td>',
    '    </tr>',
    '  )',
    '}',
    '',
    'function Table({ orders, sort, setSort, onPick }: { orders: Order[]; sort: Sort; setSort: (s: Sort) => void; onPick: (id: string) => void }) {',
    "  const cols: (keyof Order)[] = ['id', 'customer', 'region', 'total', 'status']",
    '  const sorted = useMemo(() => {',
    '    const out = [...orders]',
    "    out.sort((a, b) => (a[sort.key] < b[sort.key] ? -1 : a[sort.key] > b[sort.key] ? 1 : 0) * (sort.dir === 'asc' ? 1 : -1))",
    '    return out',
    '  }, [orders, sort])',
    '  return (',
    '    <table>',
    '      <thead>',
    '        <tr>',
    '          {cols.map((c) => (',
    "            <th key={c} onClick={() => setSort({ key: c, dir: sort.key === c && sort.dir === 'asc' ? 'desc' : 'asc' })}>",
    "              {c} {sort.key === c ? (sort.dir === 'asc' ? '▲' : '▼') : ''}",
    '            </th>',
    '          ))}',
    '        </tr>',
    '      </thead>',
    '      <tbody>{sorted.map((o) => <Row key={o.id} o={o} onPick={onPick} />)}</tbody>',
    '    </table>',
    '  )',
    '}',
    '',
    'function Filter({ value, onChange, regions }: { value: string; onChange: (v: string) => void; regions: string[] }) {',
    '  return (',
    '    <label>',
    '      Region',
    '      <select value={value} onChange={(e) => onChange(e.target.value)}>',
    '        <option value="">all</option>',
    '        {regions.map((r) => <option key={r} value={r}>{r}</option>)}',
    '      </select>',
    '    </label>',
    '  )',
    '}',
    '',
    'function Note({ id, onDone }: { id: string; onDone: () => void }) {',
    "  const [text, setText] = useState('')",
    "  const [state, setState] = useState<'idle' | 'saving' | 'saved' | string>('idle')",
    '  const save = async () => {',
    "    setState('saving')",
    '    try {',
    "      await execute('bench/note', { order: id, text })",
    "      setState('saved')",
    '      onDone()',
    '    } catch (e) {',
    "      setState('error: ' + (e as Error).message)",
    '    }',
    '  }',
    '  return (',
    '    <form onSubmit={(e) => { e.preventDefault(); void save() }}>',
    '      <textarea value={text} onChange={(e) => setText(e.target.value)} />',
    "      <button disabled={state === 'saving'}>Save note for {id}</button>",
    '      <span className="state">{state}</span>',
    '    </form>',
    '  )',
    '}',
    '',
    'export default function Board({ input }: { input: { region?: string } }) {',
    '  const [orders, setOrders] = useState<Order[]>([])',
    "  const [region, setRegion] = useState(input.region ?? '')",
    "  const [sort, setSort] = useState<Sort>({ key: 'id', dir: 'asc' })",
    '  const [picked, setPicked] = useState<string | null>(null)',
    "  const [status, setStatus] = useState('loading')",
    '  useEffect(() => {',
    "    query('bench/orders', { region })",
    '      .then((r: { rows: Order[] }) => { setOrders(r.rows); setStatus(`${r.rows.length} orders`) })',
    "      .catch((e: Error) => setStatus('error: ' + e.message))",
    '  }, [region])',
    '  const regions = useMemo(() => [...new Set(orders.map((o) => o.region))].sort(), [orders])',
    '  return (',
    '    <main>',
    '      <header>',
    '        <h1>Orders {region === "" ? "" : `in ${region}`}</h1>',
    '        <Filter value={region} onChange={setRegion} regions={regions} />',
    '        <p id="status">{status}</p>',
    '      </header>',
    '      <div className="cards">',
    ...widgets.map((w) => `        <${w}Card orders={orders} />`),
    '      </div>',
    '      <Table orders={orders} sort={sort} setSort={setSort} onPick={setPicked} />',
    '      {picked !== null && <Note id={picked} onDone={() => setPicked(null)} />}',
    '    </main>',
    '  )',
    '}',
    '',
  )
  return parts.join('\n')
}

async function run(): Promise<Row[]> {
  const rows: Row[] = []
  const dataDir = tempDir('bench-components-')
  let child: ServerChild | undefined
  try {
    process.stderr.write('  starting platform...\n')
    child = await startPlatformChild(dataDir)
    const { token } = child.info
    if (token === undefined) throw new Error('platform child reported no token')
    const base = `http://127.0.0.1:${String(child.info.port)}`
    const headers = { authorization: `Bearer ${token}` }
    const source = boardSource()
    const lines = source.split('\n').length
    const created = await fetch(`${base}/api/v1/components`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        namespace: 'bench',
        name: 'board',
        title: 'Orders board',
        source_code: source,
        enabled_queries: ['bench/orders'],
        enabled_functions: ['bench/note'],
      }),
    })
    if (created.status !== 201)
      throw new Error(`creating the component: ${String(created.status)} ${await created.text()}`)
    const compileUrl = `${base}/api/v1/components/bench/board/compile`
    const t0 = performance.now()
    const first = await fetch(compileUrl, { method: 'POST', headers })
    const firstMs = performance.now() - t0
    if (first.status !== 200) throw new Error(`compile answered ${String(first.status)}: ${await first.text()}`)
    const bundleBytes = ((await first.json()) as { bundle_bytes: number }).bundle_bytes

    const pid = child.pid
    const helperPids = childPids(child.pid)
    const row = (label: string, m: Measurement, extra: Partial<Row> = {}) =>
      rows.push({ benchmark: NAME, case: label, ...m, ...extra })

    process.stderr.write(`  compile of a ${String(lines)}-line JSX source, one at a time\n`)
    const compile = await measureSequential({ url: compileUrl, method: 'POST', headers, pid, helperPids })
    row(`POST …/compile (${String(lines)}-line JSX), one at a time`, compile, {
      note: `p50 ${compile.latencyP50Ms.toFixed(1)} ms (target ≤ 200 ms: ${compile.latencyP50Ms <= 200 ? 'ok' : 'OVER'}); the first compile of the process (esbuild's service starting) ${firstMs.toFixed(0)} ms; esbuild (native, its own process: in "other") + storing the ${String(bundleBytes)}-byte bundle; the route's whole round trip`,
    })

    const READ = 'GET /api/v1/agents/default/default (resource read)'
    const RENDER = 'GET /components/bench/board/render'
    const read: LoadTarget = { url: `${base}/api/v1/agents/default/default`, headers, pid, helperPids }
    const render: LoadTarget = { url: `${base}/components/bench/board/render`, headers, pid, helperPids }
    await expectOk(read.url, headers)
    await expectOk(render.url, headers)
    process.stderr.write('  under load: resource read, render\n')
    row(READ, await measure(read), { baseline: true, note: 'CPU is the whole platform process (gateway + service)' })
    row(RENDER, await measure(render), {
      limit: 2,
      note: 'per render: the component and its bundle from memory, a sealed view ticket (AES-GCM, no write), the page and its CSP',
    })
    process.stderr.write('  one at a time: resource read, render\n')
    const readOne = await measureSequential(read)
    row(`${READ}, one at a time`, readOne)
    const renderOne = await measureSequential(render)
    const ratio = renderOne.latencyP50Ms / readOne.latencyP50Ms
    row(`${RENDER}, one at a time`, renderOne, {
      reference: `${READ}, one at a time`,
      limit: 2,
      note: `p50 latency ${ratio.toFixed(2)}× the resource read's (target ≤ 2×: ${ratio <= 2 ? 'ok' : 'OVER'})`,
    })
  } finally {
    await child?.stop()
    removeTempDir(dataDir)
  }
  return rows
}

const bench: Benchmark = {
  name: NAME,
  description: 'component compile (~300-line JSX) and render vs the resource read',
  run,
}
export default bench
