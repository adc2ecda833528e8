import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { RequestHistogram } from './request-histogram.ts'

export type { RouteTimer } from './request-histogram.ts'

/*
 * The process's Prometheus metrics: one registry, every metric of the platform defined here (names
 * `agent_platform_*`, units in the names, labels of low cardinality only), so any layer records
 * without importing the layer that serves them. A process has one registry as Prometheus expects
 * (one scrape target per process); a test process running several platforms sums their gauges.
 *
 * Counters and histograms are recorded where things happen. The gauges below "filled at scrape"
 * are read only when Prometheus asks: each role registers what it can tell (`onScrape`, removed when
 * the role stops), and `renderMetrics` zeroes those gauges, runs the collectors, then renders.
 * Per-process values (SSE streams, partitions, sandboxes) are added (`inc`); cluster-wide ones read
 * from NATS or Postgres (consumer backlog, jobs by state) are set, and cached by their collector
 * (`scrape-sample.ts`) so a scrape every second does not query every second.
 * The list with labels and example queries: docs/operations.md#metrics.
 */
export const metricsRegistry = new Registry()

const registers = [metricsRegistry]

// prom-client's process metrics: CPU, resident memory, heap, event-loop lag, open handles
collectDefaultMetrics({ register: metricsRegistry, prefix: 'agent_platform_' })

/** Seconds: 1 ms to 1 min (a streamed route ends its request when its stream starts). */
const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

export const httpRequestDuration = new RequestHistogram(
  'agent_platform_http_request_duration_seconds',
  'HTTP requests answered by the gateway, by route id (or a fixed name for what the gateway answers itself) and status; a streamed route until its stream starts',
  SECONDS_BUCKETS,
)
metricsRegistry.registerMetric(httpRequestDuration as never)

export const llmCalls = new Counter({
  name: 'agent_platform_llm_calls_total',
  help: 'LLM provider calls ended, by provider type, model and outcome (ok | error)',
  labelNames: ['provider', 'model', 'outcome'] as const,
  registers,
})

export const llmTokens = new Counter({
  name: 'agent_platform_llm_tokens_total',
  help: 'tokens the providers reported, by provider type, model and direction (input | output)',
  labelNames: ['provider', 'model', 'direction'] as const,
  registers,
})

export const llmCallDuration = new Histogram({
  name: 'agent_platform_llm_call_duration_seconds',
  help: 'LLM provider calls from the request to the last event, by provider type and model',
  labelNames: ['provider', 'model'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
  registers,
})

// ---------------------------------------------------------------------------------------------
// Filled at scrape

export const natsRtt = new Gauge({
  name: 'agent_platform_nats_rtt_seconds',
  help: "round trip to the NATS server on this process's connection (nc.rtt(), sampled at scrape)",
  registers,
})

export const jobConsumerPending = new Gauge({
  name: 'agent_platform_job_consumer_pending_messages',
  help: "jobs waiting in a pool's queue, not yet delivered to a worker (num_pending of the pool's consumer)",
  labelNames: ['pool'] as const,
  registers,
})

export const jobConsumerAckPending = new Gauge({
  name: 'agent_platform_job_consumer_ack_pending_messages',
  help: "jobs delivered to a pool's workers and not yet acknowledged (num_ack_pending of the pool's consumer)",
  labelNames: ['pool'] as const,
  registers,
})

export const jobsByState = new Gauge({
  name: 'agent_platform_jobs',
  help: 'jobs in the execution mirror created in the last 24 hours, by pool and state (the window of GET /api/v1/queue/stats)',
  labelNames: ['pool', 'state'] as const,
  registers,
})

export const actorPartitionsOwned = new Gauge({
  name: 'agent_platform_actor_partitions_owned',
  help: "actor partitions this process's actor host owns, by actor type",
  labelNames: ['actor_type'] as const,
  registers,
})

export const sandboxes = new Gauge({
  name: 'agent_platform_sandboxes',
  help: "sandboxes of this process's warm pool by state (idle | in_use | starting); their sum is the pool's size",
  labelNames: ['state'] as const,
  registers,
})

export const sandboxesMax = new Gauge({
  name: 'agent_platform_sandboxes_max',
  help: "the most sandboxes this process's warm pool may hold",
  registers,
})

export const sandboxWaiting = new Gauge({
  name: 'agent_platform_sandbox_waiting_requests',
  help: "executions waiting for a sandbox of this process's warm pool",
  registers,
})

export const sseStreamsOpen = new Gauge({
  name: 'agent_platform_sse_streams_open',
  help: "Server-Sent Events streams open on this process's gateway",
  registers,
})

const SCRAPED: readonly Gauge[] = [
  natsRtt,
  jobConsumerPending,
  jobConsumerAckPending,
  jobsByState,
  actorPartitionsOwned,
  sandboxes,
  sandboxesMax,
  sandboxWaiting,
  sseStreamsOpen,
]

export type ScrapeCollector = () => Promise<void> | void

const collectors = new Set<ScrapeCollector>()

/** Runs `collect` at every scrape, before the text is rendered; returns its removal (for the role's stop). */
export function onScrape(collect: ScrapeCollector): () => Promise<void> {
  collectors.add(collect)
  return async () => {
    collectors.delete(collect)
  }
}

export interface MetricsText {
  contentType: string
  body: string
}

let rendering: Promise<MetricsText> | undefined

async function render(): Promise<MetricsText> {
  for (const g of SCRAPED) g.reset()
  // a collector that fails leaves its series out of this scrape; the others still report
  await Promise.all(
    [...collectors].map(async (c) => {
      try {
        await c()
      } catch {
        // left out of this scrape
      }
    }),
  )
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() }
}

/**
 * The exposition text of the process. Scrapes that overlap share one rendering: the gauges filled
 * at scrape are zeroed and refilled by it, which two interleaved renderings would mix up.
 */
export function renderMetrics(): Promise<MetricsText> {
  rendering ??= render().finally(() => {
    rendering = undefined
  })
  return rendering
}
