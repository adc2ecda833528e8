import http from 'node:http'
import type { AddressInfo } from 'node:net'

/*
 * A real OTLP/HTTP trace receiver, as a collector's: `POST /v1/traces` with the JSON encoding
 * (the platform's exporter sends `application/json`), answered 200 `{}`. Every span received is
 * kept, flattened (ids as hex, attributes as plain values), for tests to look traces up by id.
 */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** OTLP's enum: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number
  attributes: Record<string, unknown>
  service: string
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number
}

export interface OtlpReceiver {
  /** The base URL to give OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string
  spans: ReceivedSpan[]
  /** Bodies received (POSTs to /v1/traces). */
  posts: number
  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[]
  close(): Promise<void>
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: { key: string; value: AnyValue }[]
  status?: { code?: number }
}
interface OtlpBody {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: AnyValue }[] }
    scopeSpans?: { spans?: OtlpSpan[] }[]
  }[]
}

/** OTLP/JSON ids are hex; base64 (protobuf-style JSON) is turned into hex too. */
const hexId = (id: string | undefined): string =>
  id === undefined || id === '' ? '' : /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex')

const plain = (v: AnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue))

const attributesOf = (list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, plain(a.value)]))

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const r = {
    url: '',
    spans,
    posts: 0,
    trace: (traceId: string) => spans.filter((s) => s.traceId === traceId),
    close: async () => undefined as void,
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end()
        return
      }
      r.posts++
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpBody
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '')
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            spans.push({
              traceId: hexId(s.traceId),
              spanId: hexId(s.spanId),
              parentSpanId: hexId(s.parentSpanId),
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
              service,
              status: s.status?.code ?? 0,
            })
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  r.url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`
  r.close = () => new Promise<void>((resolve) => server.close(() => resolve()))
  return r
}
