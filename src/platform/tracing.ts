import { AsyncLocalStorage } from 'node:async_hooks'
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api'
import type { Logger } from '../kernel/log.ts'

/*
 * OpenTelemetry traces, created explicitly at the hops of a request (no auto-instrumentation: its
 * module hooks cost even when tracing is off). Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set, and
 * off means off: no @opentelemetry module is loaded (the SDK is imported dynamically by
 * `startTracing`, the types above are erased), and each hop pays one boolean check (`tracing.on`).
 *
 * The current span travels in-process in an AsyncLocalStorage of this module (not the API's global
 * context manager: nothing else of the process has to agree with it); across processes as a W3C
 * `traceparent` (`00-<trace id>-<span id>-<flags>`) in a NATS header (gateway → service), in the
 * chat actor's turn (actors/protocols/chat.ts), in the job's state (the job record) and in the
 * outbound LLM request's headers. A hop starts its span with `startSpan` (the parent: a given
 * traceparent, else the span current here) and runs the work under it with `span.run`.
 *
 * One tracer per process: the last `startTracing` wins (a process runs one platform).
 */
export type SpanKind = 'server' | 'client' | 'internal' | 'producer' | 'consumer'
export type SpanAttributes = Record<string, string | number | boolean | undefined>

export interface TraceSpan {
  readonly traceId: string
  /** This span as a W3C traceparent: what a hop downstream starts its span under. */
  readonly traceparent: string
  /** Runs `fn` with this span current (its async descendants see it as their parent). */
  run<T>(fn: () => T): T
  setAttribute(key: string, value: string | number | boolean): void
  /** Marks the span failed (status ERROR, the exception recorded); does not end it. */
  fail(err: unknown): void
  end(): void
}

export interface SpanOptions {
  kind?: SpanKind
  /** A W3C traceparent to start under (a request's, a job record's); absent: the span current here. */
  parent?: string | undefined
  attributes?: SpanAttributes
}

export interface TracingSettings {
  OTEL_EXPORTER_OTLP_ENDPOINT: string
  OTEL_SERVICE_NAME: string
  OTEL_TRACES_SAMPLER_RATIO: number
  OTEL_EXPORT_DELAY_MS: number
}

interface Loaded {
  api: typeof import('@opentelemetry/api')
  tracer: Tracer
  kinds: Record<SpanKind, number>
}

/** `on`: read on every hop; true only between `startTracing` and its stop. */
export const tracing: { on: boolean } = { on: false }

let loaded: Loaded | null = null
const current = new AsyncLocalStorage<Context>()

/** Whether the SDK was ever imported in this process (tests check that off loads nothing). */
export const tracingLoaded = (): boolean => loaded !== null

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/** The parts of a well-formed W3C traceparent (version 00, non-zero ids); null for anything else. */
function parseTraceparent(value: string): RegExpExecArray | null {
  const m = TRACEPARENT.exec(value)
  return m === null || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN ? null : m
}

/** Whether `value` is a well-formed W3C traceparent (version 00, non-zero ids). */
export const isTraceparent = (value: string): boolean => parseTraceparent(value) !== null

/** The trace id of a traceparent, or undefined when it is not one. */
export const traceIdOf = (traceparent: string): string | undefined =>
  isTraceparent(traceparent) ? traceparent.slice(3, 35) : undefined

/**
 * Loads the SDK and starts exporting (OTLP/HTTP, JSON) to `<endpoint>/v1/traces`; answers the stop
 * (flushes what is buffered). Does nothing, and loads nothing, when the endpoint is empty.
 */
export async function startTracing(s: TracingSettings, log: Logger): Promise<() => Promise<void>> {
  if (s.OTEL_EXPORTER_OTLP_ENDPOINT === '') return async () => undefined
  const [api, sdk, exporterPkg, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ])
  const exporter = new exporterPkg.OTLPTraceExporter({
    url: `${s.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`,
  })
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': s.OTEL_SERVICE_NAME }),
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(s.OTEL_TRACES_SAMPLER_RATIO) }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter, { scheduledDelayMillis: s.OTEL_EXPORT_DELAY_MS })],
  })
  loaded = {
    api,
    tracer: provider.getTracer('agent-platform'),
    kinds: {
      internal: api.SpanKind.INTERNAL,
      server: api.SpanKind.SERVER,
      client: api.SpanKind.CLIENT,
      producer: api.SpanKind.PRODUCER,
      consumer: api.SpanKind.CONSUMER,
    },
  }
  tracing.on = true
  log.info(
    { endpoint: s.OTEL_EXPORTER_OTLP_ENDPOINT, ratio: s.OTEL_TRACES_SAMPLER_RATIO, service: s.OTEL_SERVICE_NAME },
    'tracing on',
  )
  return async () => {
    tracing.on = false
    await provider.shutdown().catch((err: unknown) => log.warn({ err }, 'flushing the last spans failed'))
  }
}

function parentContext(l: Loaded, traceparent: string | undefined): Context {
  if (traceparent === undefined) return current.getStore() ?? l.api.ROOT_CONTEXT
  const m = parseTraceparent(traceparent)
  if (m === null) return l.api.ROOT_CONTEXT
  return l.api.trace.setSpanContext(l.api.ROOT_CONTEXT, {
    traceId: m[1] as string,
    spanId: m[2] as string,
    traceFlags: Number.parseInt(m[3] as string, 16) & 1,
    isRemote: true,
  })
}

const hex2 = (flags: number): string => (flags & 1 ? '01' : '00')

class OtelSpan implements TraceSpan {
  readonly traceId: string
  readonly traceparent: string
  private readonly ctx: Context
  private readonly span: Span
  private readonly l: Loaded

  constructor(l: Loaded, span: Span, parent: Context) {
    this.l = l
    this.span = span
    const sc = span.spanContext()
    this.traceId = sc.traceId
    this.traceparent = `00-${sc.traceId}-${sc.spanId}-${hex2(sc.traceFlags)}`
    this.ctx = l.api.trace.setSpan(parent, span)
  }

  run<T>(fn: () => T): T {
    return current.run(this.ctx, fn)
  }

  setAttribute(key: string, value: string | number | boolean): void {
    this.span.setAttribute(key, value)
  }

  fail(err: unknown): void {
    const e = err instanceof Error ? err : new Error(String(err))
    this.span.recordException(e)
    this.span.setStatus({ code: this.l.api.SpanStatusCode.ERROR, message: e.message })
  }

  end(): void {
    this.span.end()
  }
}

/** Starts a span (call only when `tracing.on`; undefined otherwise). */
export function startSpan(name: string, opts: SpanOptions = {}): TraceSpan | undefined {
  const l = loaded
  if (l === null || !tracing.on) return undefined
  const parent = parentContext(l, opts.parent)
  let attributes: Attributes | undefined
  if (opts.attributes !== undefined) {
    attributes = {}
    for (const k in opts.attributes) {
      const v = opts.attributes[k]
      if (v !== undefined) attributes[k] = v
    }
  }
  const span = l.tracer.startSpan(
    name,
    { kind: l.kinds[opts.kind ?? 'internal'], ...(attributes === undefined ? {} : { attributes }) },
    parent,
  )
  return new OtelSpan(l, span, parent)
}

/**
 * Runs `fn` in a span that ends when it settles (failed when it throws); just `fn()` when tracing
 * is off. For hops that are not per-request hot paths, or that already cost far more than a closure.
 */
export async function inSpan<T>(
  name: string,
  opts: SpanOptions,
  fn: (span: TraceSpan | undefined) => Promise<T>,
): Promise<T> {
  if (!tracing.on) return fn(undefined)
  const span = startSpan(name, opts)
  if (span === undefined) return fn(undefined)
  try {
    return await span.run(() => fn(span))
  } catch (err) {
    span.fail(err)
    throw err
  } finally {
    span.end()
  }
}

/** The span current here as a traceparent (to carry across a process boundary); undefined when off or none. */
export function currentTraceparent(): string | undefined {
  const l = loaded
  if (!tracing.on || l === null) return undefined
  const ctx = current.getStore()
  if (ctx === undefined) return undefined
  const sc = l.api.trace.getSpanContext(ctx)
  if (sc === undefined || !l.api.isSpanContextValid(sc)) return undefined
  return `00-${sc.traceId}-${sc.spanId}-${hex2(sc.traceFlags)}`
}

const NO_FIELD: { traceparent?: string } = Object.freeze({})

/** `{ traceparent }` of the span current here, to spread into a message or record; `{}` when off or none. */
export function traceparentField(): { traceparent?: string } {
  if (!tracing.on) return NO_FIELD
  const traceparent = currentTraceparent()
  return traceparent === undefined ? NO_FIELD : { traceparent }
}
