import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { FormatRegistry, Type as T, type Static, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import '../../schemas/formats.ts'
import { addressRangesError } from './address-ranges.ts'
import { AppError } from './errors.ts'

/*
 * Every setting of the platform, described once: type, default and meaning. `loadConfig` parses
 * the environment against it, docs/configuration.md's table is printed from it
 * (`npm run cli -- config-table --write` puts it in docs/configuration.md), and nothing else reads process.env for settings.
 */
const int = (def: number, description: string, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  T.Integer({ default: def, minimum: min, maximum: max, description })
const num = (def: number, description: string, min = 0) => T.Number({ default: def, minimum: min, description })
const bool = (def: boolean, description: string) => T.Boolean({ default: def, description })
const str = (def: string, description: string) => T.String({ default: def, description })
const oneOf = <V extends string>(values: readonly V[], def: V, description: string) =>
  T.Union(
    values.map((v) => T.Literal(v)),
    { default: def, description: `${description} (${values.join(' | ')})` },
  )
const jsonText = (def: string, description: string) => T.String({ default: def, description, format: 'json' })

/*
 * Formats of settings whose refusal should say what is wrong, not only "must match format": the
 * message names the offending part (issuesOf uses it instead of TypeBox's).
 */
const FORMAT_ERRORS: Record<string, (value: string) => string | undefined> = {
  'address-ranges': addressRangesError,
}
for (const [name, error] of Object.entries(FORMAT_ERRORS))
  if (!FormatRegistry.Has(name)) FormatRegistry.Set(name, (v) => error(v) === undefined)

export const ConfigSchema = T.Object({
  // Platform process
  NODE_ENV: oneOf(
    ['development', 'production', 'test'],
    'development',
    'production refuses to start without the required secrets',
  ),
  HOST: str('0.0.0.0', 'gateway bind address'),
  PORT: int(8000, 'gateway HTTP port', 0, 65535),
  CONSOLE_PORT: int(
    51245,
    'web console port (docs/console.md); served by ROLES=console, and by ROLES=all unless 0',
    0,
    65535,
  ),
  CONSOLE_BUILD_DIR: str(
    '',
    'where the console build lives (default DATA_DIR/console): a build whose stamp matches the sources is served as it is, a stale one is rebuilt there (so it must be writable then); the image points it at the build it made (deploy/Dockerfile)',
  ),
  CONSOLE_API_URL: str(
    '',
    "the API the console server proxies to (a gateway's base URL, e.g. http://gateway:8000); empty: this process's own gateway (ROLES=all); required for ROLES=console without the gateway role",
  ),
  DATA_DIR: str('./.data', 'single-node data directory (NATS, Postgres, generated secrets)'),
  LOG_LEVEL: oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], 'info', 'log level'),
  ROLES: str(
    'all',
    'comma-separated roles this process runs: gateway, resources, workers, actors, console (or all: every one, the console unless CONSOLE_PORT is 0)',
  ),
  RPC_IN_PROCESS: bool(
    true,
    'a process running both the gateway and the resources role hands requests to its own routes in memory; false: every request goes over NATS, spread by the queue group over all resources processes',
  ),
  METRICS_PORT: int(
    0,
    'Prometheus metrics (`GET /metrics`) on this port of HOST in every process, and no longer on the gateway port; 0: on the gateway port of a process with the gateway role, none in the others',
    0,
    65535,
  ),
  METRICS_TOKEN: str('', 'bearer token a scrape of `GET /metrics` must send; empty: no authentication'),
  // traces (src/platform/tracing.ts, docs/operations.md#traces)
  OTEL_EXPORTER_OTLP_ENDPOINT: str(
    '',
    'OpenTelemetry collector base URL (OTLP/HTTP, JSON; spans go to `<url>/v1/traces`); empty: tracing off, no OpenTelemetry module loaded',
  ),
  OTEL_SERVICE_NAME: str('agent-platform', 'the `service.name` resource attribute of exported spans'),
  OTEL_TRACES_SAMPLER_RATIO: T.Number({
    default: 1,
    minimum: 0,
    maximum: 1,
    description:
      'share of new traces recorded (0..1, by trace id); a request with a sampled `traceparent` is recorded whatever the ratio (parent-based)',
  }),
  OTEL_EXPORT_DELAY_MS: int(5000, 'longest time a finished span waits in the batch before it is exported', 10),
  HTTP_MAX_BODY_BYTES: int(524288, 'largest accepted JSON request body in bytes', 1024, 64 * 1024 * 1024),
  SSE_PING_SECONDS: num(
    15,
    'a `: ping` comment on a Server-Sent Events stream after this many seconds without a write',
    0.01,
  ),
  SSE_MAX_BUFFER_BYTES: int(
    1048576,
    'bytes a slow SSE client may fall behind before the gateway drops it (it resumes with Last-Event-ID)',
    1024,
  ),
  SSE_IDLE_TIMEOUT_SECONDS: num(
    660,
    'an SSE stream without an event for this long ends with an `error` event `stream.timeout` (AGENT_JOB_TIMEOUT + 60 s)',
    0.01,
  ),
  SSE_RECONNECT_WINDOW_SECONDS: num(
    10,
    'a streamed chat turn whose last client disconnected is cancelled (provider call aborted, `error` event `chat.stream_abandoned`) unless a client resumes within this many seconds',
    0.01,
  ),
  NATS_URL: str('', 'NATS server(s), comma-separated; empty starts a local nats-server (single-node)'),
  QUEUE_STORE_URL: str('', 'alias of NATS_URL (the name some deployments give the queue store)'),
  NATS_SERVER_BIN: str(
    '',
    'the nats-server binary single-node mode (and the test suite) starts; empty: a v2.15.3 or newer one on PATH, in DATA_DIR/bin or in ~/.cache/agent-platform/bin (built there with Go when missing), else the installed package (docs/nats-server.md). Read from the environment by the server picker itself, so test setups can set it',
  ),
  NATS_PREFIX: str('', 'prefix for every subject, stream and bucket (isolates installations sharing one NATS)'),
  // How a process connects to a NATS_URL server (at most one way); single-node mode ignores them: it uses the credentials it generated in DATA_DIR/nats
  NATS_USER: str('', 'NATS user name (with NATS_PASSWORD)'),
  NATS_PASSWORD: str('', 'NATS password of NATS_USER'),
  NATS_TOKEN: str('', 'NATS authentication token'),
  NATS_NKEY_FILE: str(
    '',
    'file holding a NATS user NKey seed (a line starting with SU), e.g. DATA_DIR/nats/gateway.nk of a single-node platform',
  ),
  NATS_CREDS_FILE: str('', 'NATS .creds file (user JWT and seed, decentralised auth)'),
  NATS_INBOX_PREFIX: str(
    '',
    'prefix of the reply subjects this process subscribes to (nats.js default `_INBOX`); empty: the `# inbox_prefix:` line of NATS_NKEY_FILE when it has one (`_INBOX_gateway` for the single-node gateway user, which may subscribe to no other inbox)',
  ),
  // TLS to a NATS_URL server (a cluster or leaf node of docs/multi-region.md); single-node mode ignores them
  NATS_TLS_CA_FILE: str(
    '',
    "PEM file of the CA that signed the NATS servers' certificates; set: the connection must be TLS and the server certificate is verified against it",
  ),
  NATS_TLS_CERT_FILE: str(
    '',
    'PEM client certificate presented to the NATS server (servers with `verify: true` require one; with NATS_TLS_KEY_FILE)',
  ),
  NATS_TLS_KEY_FILE: str('', 'PEM private key of NATS_TLS_CERT_FILE'),
  NATS_STREAM_REPLICAS: int(
    1,
    'replicas of every stream, KV and object bucket the platform creates (3 on a hub cluster of 3 or more servers; 1 on a single server, which refuses more)',
    1,
    5,
  ),
  // required and general
  SECRET_KEY: str('', 'JWT signing key (required in production; generated in development)'),
  ENCRYPTION_KEY: str('', 'key for secrets at rest (required in production; generated in development)'),
  ENCRYPTION_KEY_PREVIOUS: str(
    '',
    'comma-separated earlier ENCRYPTION_KEY values: still decrypt after a rotation until `npm run cli -- reencrypt-secrets` rewrites everything with the current key',
  ),
  DATABASE_PASSWORD: str('', 'Postgres password (required in production)'),
  SUPERADMIN_EMAIL: str(
    '',
    'superadmin created at first start (required in production; admin@localhost in development)',
  ),
  SUPERADMIN_PASSWORD: str(
    '',
    "seeds the superadmin password when AUTH_MODE includes password; a restart with another value resets it and revokes the superadmin's sessions, the same value changes nothing, empty keeps the stored one",
  ),
  DOMAIN: str('', 'public domain of the installation (required in production)'),
  DEBUG: bool(false, 'debug mode: logs at `debug` unless LOG_LEVEL names a level other than `info`'),
  TRUSTED_PROXIES: T.String({
    default: '',
    format: 'address-ranges',
    description:
      'comma-separated addresses and CIDR ranges (IPv4 or IPv6, e.g. `10.0.0.0/8,fd00::/8`) of reverse proxies whose X-Forwarded-For is believed: the client address of rate limits and logs is the nearest hop not in the list (an IPv4-mapped peer like ::ffff:10.1.2.3 is in 10.0.0.0/8). A console (ROLES=console) passes the chain on from a listed peer and believes its X-Forwarded-Proto; from any other peer it sends the peer alone',
  }),
  CORS_ORIGINS: str('', 'comma-separated allowed origins; * allows any'),
  SMTP_HOST: str('', 'SMTP server for emails'),
  SMTP_PORT: int(587, 'SMTP port', 1, 65535),
  SMTP_USER: str('', 'SMTP user'),
  SMTP_PASSWORD: str('', 'SMTP password'),
  SMTP_DOMAIN: str('', 'sender domain of emails'),
  DATABASE_USER: str('postgres', 'Postgres user'),
  DATABASE_HOST: str('', 'Postgres host; with DATABASE_URL empty too, a local cluster is started'),
  DATABASE_PORT: int(5432, 'Postgres port', 1, 65535),
  DATABASE_NAME: str('platform', 'Postgres database'),
  DATABASE_URL: str('', 'full Postgres URL (overrides the parts above)'),
  CONFIG_FILE: str('', 'declarative config applied at start when AUTO_APPLY_CONFIG is true'),
  AUTO_APPLY_CONFIG: bool(false, 'apply CONFIG_FILE at start'),
  CONFIG_MAX_BYTES: int(
    5 * 1024 * 1024,
    'largest declarative config or package document (YAML text, after package variables are substituted) in bytes; a larger one is refused (413 `config.too_large`) before it is parsed',
    1024,
    256 * 1024 * 1024,
  ),
  APP_CPU_LIMIT: num(2.0, 'deployment CPU limit (used by deploy/)'),
  APP_MEMORY_LIMIT: str('2G', 'deployment memory limit'),
  APP_CPU_RESERVATION: num(0.5, 'deployment CPU reservation'),
  APP_MEMORY_RESERVATION: str('512M', 'deployment memory reservation'),
  ANALYTICS_HOST: str(
    '',
    'ClickHouse host (HTTP interface) of the request and execution logs; empty: nothing is collected and the log pages answer empty lists',
  ),
  ANALYTICS_PORT: int(8123, 'ClickHouse HTTP port', 1, 65535),
  ANALYTICS_USER: str('', 'ClickHouse user (empty: `default`)'),
  ANALYTICS_PASSWORD: str('', 'ClickHouse password'),
  ANALYTICS_DATABASE: str('', 'ClickHouse database of the log tables, created when missing (empty: `platform_logs`)'),
  ANALYTICS_RETENTION_DAYS: int(
    90,
    'days of request and execution logs kept: a table TTL on ClickHouse ≥ 19.6, else an hourly sweep dropping older day partitions',
    1,
  ),
  ANALYTICS_HOT_RETENTION_DAYS: int(
    30,
    'days on fast storage before object-storage tiering; not applied (needs a ClickHouse storage policy with a cold volume): logged at start when below the retention',
    1,
  ),
  ANALYTICS_BUFFER_RECORDS: int(
    50000,
    'log records a resources process holds while ClickHouse is slow or down; more are dropped and counted',
    100,
  ),
  // authentication
  AUTH_MODE: oneOf(['otp', 'password', 'password+otp'], 'otp', 'login mode'),
  ACCESS_TOKEN_EXPIRE_MINUTES: int(15, 'access token lifetime', 1),
  REFRESH_TOKEN_EXPIRE_DAYS: int(30, 'refresh token lifetime', 1),
  TOKEN_EXCHANGE_DEFAULT_ROLE: str('GuestUsers', 'role of users auto-provisioned by token exchange'),
  TOKEN_EXCHANGE_ALLOW_ADMINS: bool(
    false,
    'token exchange may mint tokens for admins (users holding user, role, key, exchange, queue or system administration)',
  ),
  OAUTH_BIND_BROWSER_SESSION: bool(true, 'bind OAuth flows (connectors, MCP servers) to the starting browser'),
  // rate limits
  RATE_LIMIT_LOGIN_IP_MAX: int(10, 'login requests per IP per window', 1),
  RATE_LIMIT_LOGIN_EMAIL_MAX: int(
    5,
    'wrong passwords per account and client address per window before that address is refused for the account (otp mode: login requests per email per window)',
    1,
  ),
  RATE_LIMIT_LOGIN_ACCOUNT_FAILURES_MAX: int(
    50,
    'wrong passwords per account per window (from any address) after which only addresses that have not failed against it this window are still checked; the owner is never locked out',
    1,
  ),
  RATE_LIMIT_OTP_IP_MAX: int(10, 'OTP verify requests per IP per window', 1),
  RATE_LIMIT_WINDOW_SECONDS: int(900, 'rate-limit window', 1),
  OTP_EXPIRE_MINUTES: int(10, 'OTP validity', 1),
  OTP_MAX_ATTEMPTS: int(2, 'wrong OTP guesses before the code is invalidated', 1),
  // function execution
  FUNCTION_TIMEOUT: int(300, "seconds per function execution; a ceiling: a function's own timeout is clamped to it", 1),
  FUNCTION_TOKEN_MAX_MINUTES: int(
    5,
    'lifetime cap of the execution token a function receives (context.access_token); it also dies when the execution ends',
    1,
  ),
  MAX_FUNCTION_MEMORY: int(512, 'MB per function execution', 16),
  MAX_FUNCTION_CPU: num(1.0, 'cores per function execution', 0.05),
  MAX_FUNCTION_STORAGE: T.String({
    default: '1g',
    pattern: '^[0-9]+[kmgKMG]?$',
    description:
      'disk one function execution may fill: its /tmp, the only writable disk, is sized to the smaller of this and SANDBOX_TMP_MB (a quota of all its files together), and no single file may exceed it',
  }),
  FUNCTION_CONTAINER_IDLE_TIMEOUT: int(3600, 'seconds before an idle container is reaped', 1),
  ALLOW_PACKAGE_INSTALLATION: bool(true, 'allow pip install in functions'),
  ALLOWED_PACKAGES: str('', 'comma-separated package whitelist (empty = all)'),
  DEFAULT_WORKER_COUNT: int(4, 'shared (trusted) worker containers', 0),
  MAX_EXECUTION_DEPTH: T.Integer({
    minimum: 0,
    description: 'nesting depth of execution chains; 0 disables (default DEFAULT_WORKER_COUNT)',
  }),
  SHARED_POOL_RESERVE: int(
    0,
    'function-pool slots of each worker process reserved for nested calls: top-level jobs take at most QUEUE_WORKER_REPLICAS x QUEUE_FUNCTION_CONCURRENCY minus this many (at least one); chains of depth D are safe with D - 1, so full safety is MAX_EXECUTION_DEPTH minus 1',
    0,
  ),
  CALLBACK_URL_HOSTS: str('', 'callback allowlist: empty disables callbacks, * any HTTPS host, else exact hosts'),
  OUTBOUND_DNS_CACHE_SECONDS: num(
    30,
    "how long outbound HTTP (LLM providers, connectors, callbacks) reuses a host's resolved addresses; each use still checks every address and pins the connection to it. 0 resolves on every request",
    0,
  ),
  OUTBOUND_EXTRA_CA_FILE: str(
    '',
    'PEM file of extra CA certificates trusted by outbound HTTPS (callbacks, connectors), in addition to the default roots',
  ),
  // connectors (src/connectors/)
  CONNECTOR_HTTP_HOSTS: str(
    '',
    'connector hosts an admin allows over plain HTTP (comma-separated exact hosts); every other connector call must use HTTPS. Private, loopback and link-local addresses are refused either way',
  ),
  CONNECTOR_TIMEOUT_SECONDS: num(
    60,
    "ceiling of one connector call attempt (a connector's timeout_seconds is clamped to it)",
    0.1,
  ),
  CONNECTOR_MAX_RESPONSE_BYTES: int(
    1048576,
    'largest upstream response body a connector call reads; larger answers fail with outbound.response_too_large',
    1024,
  ),
  CONNECTOR_MAX_RETRIES: int(3, "ceiling of a connector's retry.max_retries", 0, 10),
  CONNECTOR_MAX_REDIRECTS: int(3, 'redirects a connector call follows (each hop checked again like the first)', 0, 10),
  CONNECTOR_MAX_OPERATIONS: int(
    200,
    'operations one connector may hold (an OpenAPI import with more is refused)',
    1,
    1000,
  ),
  // remote MCP servers as agent tools (src/mcp-servers/)
  MCP_CLIENT_TIMEOUT_SECONDS: num(
    60,
    "ceiling of one request to a remote MCP server (a server's timeout_seconds is clamped to it)",
    0.1,
  ),
  MCP_CLIENT_MAX_RESPONSE_BYTES: int(
    4194304,
    'largest answer (JSON or event stream) read from a remote MCP server for one request; a larger one fails the request',
    1024,
  ),
  MCP_CLIENT_MAX_TOOLS: int(
    1000,
    "tools read from one remote MCP server's tools/list (its pages followed); the rest are dropped with a warning",
    1,
    10000,
  ),
  MCP_CLIENT_TOOLS_CACHE_SECONDS: num(
    300,
    "how long a worker keeps a remote MCP server's tool list (also refreshed when the server announces a change, or the server is edited); 0 lists on every turn",
    0,
  ),
  OAUTH_STATE_TTL_SECONDS: int(
    600,
    'how long a started OAuth flow (connectors, MCP servers) may take before its callback is refused',
    30,
  ),
  // executors
  SANDBOX_EXECUTOR: oneOf(['pool', 'single_use', 'k8s_pod', 'disabled'], 'pool', 'sandbox executor'),
  SANDBOX_DRIVER: oneOf(['bubblewrap', 'docker'], 'bubblewrap', 'local sandbox driver'),
  TRUSTED_EXECUTOR: oneOf(['shared', 'inprocess'], 'shared', 'executor of shared_pool functions'),
  SANDBOX_MIN_SIZE: int(4, 'sandboxes created at start', 0),
  SANDBOX_MAX_SIZE: int(20, 'largest sandbox pool', 1),
  SANDBOX_MIN_IDLE: int(2, 'replenish below this many idle sandboxes', 0),
  SANDBOX_MAX_EXECUTIONS: int(100, 'executions before a sandbox is recycled', 1),
  SANDBOX_HEALTH_INTERVAL_SECONDS: int(60, 'sandbox health-check interval', 1),
  SANDBOX_CONTROL_TIMEOUT_SECONDS: int(
    60,
    "how long the scale and reload endpoints of /api/v1/containers and /api/v1/workers wait for every live worker process to apply the pool actor's new state (the state is kept either way; late processes converge to it)",
    1,
  ),
  CONTAINER_RESTART_TIMEOUT_SECONDS: int(
    15,
    'how long POST /api/v1/system/containers/{name}/restart waits for the worker processes to look for the container',
    1,
  ),
  SANDBOX_PYTHON: str(
    '/usr/bin/python3',
    'system Python the runner uses (absolute path under /usr; a pyenv shim costs ~100 ms a start)',
  ),
  SANDBOX_MAX_PROCESSES: int(64, 'processes and threads per sandbox (RLIMIT_NPROC / pids limit)', 4),
  SANDBOX_TMP_MB: int(100, 'in-memory /tmp per sandbox, MB', 1),
  SANDBOX_SHM_MB: int(
    16,
    'in-memory /dev/shm per sandbox, MB (POSIX semaphores, small shared buffers); emptied between executions',
    1,
  ),
  SANDBOX_UID_BASE: int(
    200000,
    'first outer uid of bubblewrap sandboxes when the platform runs as root (0 = keep the uid)',
    0,
  ),
  PACKAGES_DIR: str('', 'where approved Python packages are installed (default DATA_DIR/packages)'),
  PACKAGE_INDEX_DIR: str(
    '',
    'local wheel directory pip installs from (--no-index --find-links); empty = no installs possible',
  ),
  DOCKER_HOST: str('', 'Docker Engine API socket for the docker driver'),
  SANDBOX_DOCKER_SOCKET: str(
    '/var/run/docker.sock',
    'unix socket of the Docker Engine API (Docker, or podman system service) for SANDBOX_DRIVER=docker; DOCKER_HOST, when set, wins',
  ),
  SANDBOX_IMAGE: str(
    '',
    'image of docker sandboxes (must hold /usr/bin/python3 and /runner/runner.py); empty = build the local one from the host Python and import it (localhost/platform-sandbox:<hash>)',
  ),
  K8S_SANDBOX_NAMESPACE: str('', 'namespace of sandbox pods (default: own namespace)'),
  K8S_SANDBOX_IMAGE: str('', 'sandbox pod image (default: the function image)'),
  K8S_SANDBOX_SERVICE_ACCOUNT: str('default', 'sandbox pod service account'),
  K8S_SANDBOX_POD_READY_TIMEOUT: int(120, 'seconds to wait for a sandbox pod', 1),
  K8S_RELEASE_NAME: str('', 'sets the app.kubernetes.io/instance label'),
  K8S_SANDBOX_NODE_SELECTOR: jsonText('{}', 'JSON node selector applied verbatim'),
  K8S_SANDBOX_TOLERATIONS: jsonText('[]', 'JSON tolerations applied verbatim'),
  K8S_SANDBOX_AFFINITY: jsonText('{}', 'JSON affinity applied verbatim'),
  // queues and workers
  QUEUE_WORKER_REPLICAS: int(2, 'function worker replicas', 0),
  QUEUE_FUNCTION_CONCURRENCY: int(10, 'function jobs per worker', 1),
  FUNCTION_MAX_CONCURRENT_PER_USER: int(
    0,
    "function jobs one user may run at once in one worker process (all its function worker replicas); further jobs of that user wait queued without holding a slot. 0 = half of the process's function slots (replicas x concurrency, at most SANDBOX_MAX_SIZE with the pool executor)",
    0,
  ),
  QUEUE_AGENT_REPLICAS: int(2, 'agent worker replicas', 0),
  QUEUE_AGENT_CONCURRENCY: int(5, 'agent jobs per worker', 1),
  QUEUE_AGENT_SUB_REPLICAS: int(2, 'sub-agent worker replicas', 0),
  QUEUE_AGENT_SUB_CONCURRENCY: int(5, 'sub-agent jobs per worker', 1),
  MIRROR_LINGER_MS: int(
    20,
    'how long the execution mirror waits for more job state changes before writing them to Postgres in one statement: a job that ends within it costs one row write instead of two (its execution row and its running event lag by at most this much); 0 = write at once',
    0,
    1000,
  ),
  JOB_RESULT_TTL_HOURS: int(24, "hours a job's state (JOB_STATE) and its stored result are kept", 1),
  QUEUE_MAX_RETRIES: int(
    3,
    'retries of a failed function job before the dead letter queue (agent jobs never retry)',
    0,
    20,
  ),
  QUEUE_RETRY_DELAY_SECONDS: num(10, 'first retry delay of a function job; doubles per retry', 0),
  ACTOR_LEASE_TTL_SECONDS: num(
    15,
    "actor partition lease TTL: a dead actor host's partitions are taken over about this long after its last renewal",
    1,
  ),
  ACTOR_ACK_WAIT_SECONDS: num(15, 'actor mailbox redelivery time of an unacknowledged message', 1),
  ACTOR_TIMER_MS: int(
    250,
    "how often an actor host checks its keys' timers (schedule ticks fire at most this late, besides a takeover)",
    10,
    60_000,
  ),
  WEBHOOK_SIGNATURE_TOLERANCE_SECONDS: int(
    300,
    'a signed webhook call whose X-Webhook-Timestamp is further than this from the server clock (either way) is refused 401: a captured call cannot be replayed later',
    1,
    86_400,
  ),
  SCHEDULE_MISFIRE_GRACE_SECONDS: num(
    300,
    'a schedule tick found overdue by more than this (hosts down, platform stopped) is skipped and logged instead of run late',
    1,
  ),
  SCHEDULE_MAX_CATCHUP: int(
    100,
    'overdue ticks one schedule fires in one go (the rest follow on the next timer check)',
    1,
    10_000,
  ),
  SCHEDULE_MIN_INTERVAL_SECONDS: int(
    60,
    'shortest time between two runs of a schedule saved by a non-admin (checked at save over the next runs of its cron expression; holders of platform.schedules.update:all are exempt)',
    1,
    86_400,
  ),
  SCHEDULE_RUNS_KEPT: int(1000, 'run-history rows kept per schedule (older ones are deleted as new ones arrive)', 10),
  DB_TRIGGER_BACKOFF_MAX_SECONDS: int(
    60,
    'a database trigger whose poll fails retries after its interval doubled per consecutive failure, at most this long',
    1,
    3600,
  ),
  DB_TRIGGER_STATEMENT_TIMEOUT_MS: int(
    10_000,
    "statement timeout of a database trigger's reads on the polled database",
    100,
    600_000,
  ),
  DB_TRIGGER_MAX_BATCH_BYTES: int(
    786432,
    'largest JSON size of one batch of rows (the job travels in one NATS message): a batch is cut to the rows that fit',
    1024,
    64 * 1024 * 1024,
  ),
  DB_TRIGGER_BATCHES_PER_TURN: int(
    20,
    'full batches one database trigger polls back to back before yielding to other triggers of its actor host',
    1,
    1000,
  ),
  DB_TRIGGER_COMMIT_HORIZON: bool(
    true,
    'Postgres tables: deliver a row only once no transaction can still commit a lower poll value (the poll waits for the sessions writing the table, and holds back rows newer than the oldest transaction still open), so a row committed late is not skipped (a long transaction then delays delivery)',
  ),
  DB_TRIGGER_WRITER_WAIT_MS: int(
    1000,
    'with DB_TRIGGER_COMMIT_HORIZON: how long a poll waits for the transactions writing the table when it looked; a poll still waiting then delivers nothing and the next one looks again',
    0,
    60_000,
  ),
  QUEUE_HEARTBEAT_SECONDS: num(
    10,
    'worker heartbeat interval (the WORKERS bucket keeps a beat 30 s); a worker three beats late counts as dead',
    0.1,
  ),
  JOB_RUNNING_RECORD_MS: int(
    0,
    'opt-in trade of exactly-once for speed: with N > 0 a function job fresh from its enqueue runs as soon as a worker takes it and its running state is written only once it has run N ms, so a job that ends sooner costs one state write instead of two and starts a round trip earlier (its status reads queued until then, and its first execution event is its last). The price: a job that is in its first N ms, or whose end is being recorded, when nats-server crashes may run twice, and a worker lost in that window costs an uncounted attempt. 0 = the running state is written before every run',
    0,
    60_000,
  ),
  QUEUE_ACK_WAIT_SECONDS: num(
    60,
    'seconds without a sign of life before a running job is redelivered to another worker',
    1,
  ),
  STUCK_JOB_HOURS: num(2, 'running jobs older than this are cancelled by flush-stuck-jobs', 0),
  BACKEND_REPLICAS: int(1, 'gateway/resource-service replicas (deploy/)', 1),
  UVICORN_WORKERS: int(4, 'accepted for compatibility; run more gateway processes instead', 1),
  // agent processing
  MAX_TOOL_ITERATIONS: int(25, 'tool-call rounds per message', 1),
  MAX_HISTORY_MESSAGES: int(100, 'history messages in the context', 1),
  CHAT_HISTORY_CACHE_CHATS: int(
    1000,
    'chats whose last MAX_HISTORY_MESSAGES messages a worker keeps between their turns, reading only what was added since, or nothing when the chat actor vouches for the count held (0: the whole history every turn)',
    0,
  ),
  AGENT_JOB_TIMEOUT: int(600, 'seconds per agent turn', 1),
  AGENT_DELEGATE_TIMEOUT: int(600, 'seconds a blocking parent waits for a sub-agent', 1),
  CHAT_EXPIRY_SWEEP_SECONDS: num(
    60,
    'how often chats past their `expires_in` are hard-deleted with their messages (they are never answered once expired)',
    0.05,
  ),
  AGENT_DELEGATE_MODE: oneOf(['block', 'suspend'], 'block', 'how a parent waits for a sub-agent'),
  AGENT_MAX_DELEGATION_DEPTH: int(5, 'delegation depth; 0 disables', 0),
  AGENT_SUBAGENT_QUEUE: bool(true, 'route delegated jobs to the sub-agent workers'),
  AGENT_LOCAL_TURNS: bool(
    true,
    "a chat actor host that runs agent workers too starts a turn's job in them directly (no JOBS round trip) when one has a free slot; false: every turn goes through the queue",
  ),
  TOOL_RESULT_CONTEXT_MAX_SIZE: int(102400, 'characters of a tool result entering the LLM context', 1),
  TOOL_RESULT_MAX_SIZE: int(102400, 'bytes stored per tool result', 1),
  TOOL_RESULT_MAX_INLINE: int(
    5,
    "last tool results kept inline in the LLM context; older ones become a short reference (the last round's results are always inline)",
    0,
  ),
  TOOL_RESULT_RETENTION_DAYS: int(
    30,
    'days stored tool results are kept; older ones are swept hourly (content replaced by a marker)',
    1,
  ),
  // usage and budgets (src/usage/)
  USAGE_DAILY_TOKEN_BUDGET: int(
    0,
    "tokens (prompt + completion, every agent and model together) a user may spend per UTC day; once reached, new chat messages, agent runs and the OpenAI adapter's completions answer 429 `usage.daily_budget_exhausted` until 00:00 UTC (0: no budget)",
    0,
  ),
  // stores and states
  STATE_MAX_VALUE_BYTES: int(
    262144,
    'largest state value in bytes (its JSON text); larger writes answer 413 `state.too_large`',
    1,
  ),
  STATE_CACHE_BYTES: int(
    33554432,
    'memory each resources or workers process may use for the state entries it has read (kept coherent over NATS, `states.changed`); an entry larger than 1/32 of it is not kept; 0: every state read is a query',
    0,
  ),
  STATE_SWEEP_INTERVAL_SECONDS: num(
    60,
    'how often expired state entries are deleted (they are never answered once expired)',
    0.05,
  ),
  // templates and email
  TEMPLATE_EMAIL_MAX_RECIPIENTS: int(
    50,
    'most distinct `to` addresses one POST /templates/{id}/send may name (more: 422 email.too_many_recipients)',
    1,
    1000,
  ),
  TEMPLATE_EMAIL_FROM: str(
    '',
    'sender address of template emails (empty: noreply@<SMTP_DOMAIN or DOMAIN>); `from_name` only sets the display name',
  ),
  // components (src/components/)
  COMPONENT_MAX_BUNDLE_BYTES: int(
    524288,
    'largest compiled component bundle in bytes (a rendered page carries it inline; NATS carries the page)',
    1024,
    786432,
  ),
  COMPONENT_VIEW_TICKET_SECONDS: int(3600, 'lifetime of the proxy ticket a rendered component page gets', 1),
  COMPONENT_UI_CDN: str(
    '',
    'base URL component pages load React from, e.g. https://unpkg.com (empty: the platform serves its own copy under /components/assets/)',
  ),
  COMPONENT_FRAME_ANCESTORS: str(
    '*',
    "CSP frame-ancestors of component pages: who may embed them ('none', 'self', origins, or *)",
  ),
  // Database connections and queries
  DATABASE_POOL_MIN_SIZE: int(
    0,
    "connections a database connection's pool keeps open while idle, when its config sets no min_pool_size",
    0,
    100,
  ),
  DATABASE_POOL_MAX_SIZE: int(
    5,
    "connections a database connection's pool opens at most (per process), when its config sets no max_pool_size",
    1,
    100,
  ),
  DATABASE_POOL_IDLE_SECONDS: int(
    60,
    "an idle pooled connection to an external database is closed after this many seconds (above the pool's minimum)",
    1,
  ),
  DATABASE_CONNECT_TIMEOUT_MS: int(
    5000,
    'milliseconds to open a connection to an external database (also the limit of POST /api/v1/database-connections/test)',
    100,
  ),
  QUERY_TIMEOUT_MS_MAX: int(300000, "ceiling of a query's timeout_ms (a larger value is clamped to it)", 1),
  QUERY_MAX_ROWS_MAX: int(100000, "ceiling of a query's max_rows (a larger value is clamped to it)", 1),
  // the MCP server at /mcp (src/mcp/)
  MCP_TOOLS_PAGE_SIZE: int(100, 'tools per page of an MCP tools/list answer (the rest behind nextCursor)', 1, 1000),
  MCP_PROGRESS_SECONDS: num(
    5,
    'an MCP tools/call that asked for progress (`_meta.progressToken`) gets a notifications/progress this often while it runs',
    0.05,
  ),
  // collections and files (src/files/); the per-collection limits are the collection's own max_file_size_mb / max_total_size_gb
  PUBLIC_BASE_URL: str(
    '',
    'absolute base URL of the API in links the platform hands out (temporary file URLs, icons); empty = https://DOMAIN when DOMAIN is set, else paths relative to the API',
  ),
  FILES_SIGNED_URL_SECONDS: int(3600, 'default lifetime of a temporary file download URL', 1),
  FILES_ICON_URL_SECONDS: int(
    86400,
    "lifetime of the signed URL in a collection icon's icon_url (minted on every read of the agent or function; needs no Authorization, so an <img> loads it)",
    1,
  ),
  FILES_SIGNED_URL_MAX_SECONDS: int(604800, 'longest lifetime a temporary file download URL may ask for', 1),
  FILES_UPLOAD_STAGING_SECONDS: int(
    3600,
    'an upload object whose commit never arrived (client or service gone mid-upload) is deleted after this many seconds',
    1,
  ),
  FILES_SWEEP_SECONDS: num(30, 'how often deleted and abandoned file blobs are removed from the object store', 0.05),
  FILES_TEXT_INDEX_MAX_BYTES: int(
    1048576,
    'text files up to this size are kept as text for content search and agent tools',
    0,
  ),
  FILES_CONTENT_FILTER_MAX_BYTES: int(
    262144,
    'largest file a content_filter_function is given (larger uploads to a filtered collection answer 413); at most 393216: the file travels base64 (plus its text) in the job, one NATS message of at most 1 MB',
    1,
    393216,
  ),
  FILES_TOOL_READ_MAX_CHARS: int(100000, 'characters of a file an agent tool reads into the conversation', 1),
})

export type Config = Static<typeof ConfigSchema>

/** The settings production refuses to start without. */
export const REQUIRED_IN_PRODUCTION = [
  'SECRET_KEY',
  'ENCRYPTION_KEY',
  'DATABASE_PASSWORD',
  'SUPERADMIN_EMAIL',
  'DOMAIN',
] as const

const DEV_SECRETS = ['SECRET_KEY', 'ENCRYPTION_KEY', 'DATABASE_PASSWORD'] as const

function issuesOf(schema: TSchema, value: unknown): { path: string; message: string }[] {
  return [...Value.Errors(schema, value)].map((e) => {
    const format = (e.schema as { format?: string }).format
    const explained = format === undefined || typeof e.value !== 'string' ? undefined : FORMAT_ERRORS[format]?.(e.value)
    if (explained !== undefined) return { path: e.path.replace(/^\//, ''), message: explained }
    const choices = (e.schema as { anyOf?: { const?: unknown }[] }).anyOf?.map((s) => s.const)
    const message =
      choices !== undefined && choices.every((c) => typeof c === 'string')
        ? `must be one of ${choices.join(', ')}`
        : e.message
    return { path: e.path.replace(/^\//, ''), message }
  })
}

/**
 * Reads configuration from an environment object. Unknown variables are ignored (the environment
 * holds many); known ones are converted to their type and checked. Development mode fills the
 * required secrets from `<DATA_DIR>/secrets.json`, generating it on first use, so a second start
 * reuses the same keys and data stays readable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {}
  for (const key of Object.keys(ConfigSchema.properties)) {
    const v = env[key]
    if (v !== undefined && v !== '') raw[key] = v
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Record<string, unknown>
  if (converted['MAX_EXECUTION_DEPTH'] === undefined)
    converted['MAX_EXECUTION_DEPTH'] = converted['DEFAULT_WORKER_COUNT']
  const issues = issuesOf(ConfigSchema, converted)
  if (issues.length > 0) {
    throw new AppError(
      500,
      'config.invalid',
      `invalid configuration: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      { issues },
    )
  }
  const config = converted as Config
  if (config.NATS_URL === '' && config.QUEUE_STORE_URL !== '') config.NATS_URL = config.QUEUE_STORE_URL
  config.DATA_DIR = resolve(config.DATA_DIR)
  checkNatsAuth(config)
  checkNatsTls(config)

  // A console-only process (ROLES=console) signs, verifies and decrypts nothing and has no
  // database: it proxies to a gateway over HTTP. It needs none of the secrets, and a deployment
  // should not have to hand them to it.
  const consoleOnly = config.ROLES.split(',').every((r) => r.trim() === 'console')
  if (config.NODE_ENV === 'production') {
    const missing = consoleOnly ? [] : REQUIRED_IN_PRODUCTION.filter((k) => config[k] === '')
    if (missing.length > 0) {
      throw new AppError(500, 'config.missing', `production mode requires ${missing.join(', ')}`, {
        issues: missing.map((k) => ({ path: k, message: 'required in production' })),
      })
    }
  } else {
    fillDevSecrets(config)
  }
  for (const key of ['SECRET_KEY', 'ENCRYPTION_KEY'] as const) {
    if (consoleOnly && config[key] === '') continue
    if (config[key].length < 32) {
      throw new AppError(500, 'config.invalid', `${key} must be at least 32 characters`, {
        issues: [{ path: key, message: 'too short' }],
      })
    }
  }
  return config
}

/** One way to authenticate to NATS at most, and a password only with its user. */
function checkNatsAuth(config: Config): void {
  const ways = [
    config.NATS_USER !== '' || config.NATS_PASSWORD !== '',
    config.NATS_TOKEN !== '',
    config.NATS_NKEY_FILE !== '',
    config.NATS_CREDS_FILE !== '',
  ].filter(Boolean).length
  const issue =
    ways > 1
      ? 'set one of NATS_USER/NATS_PASSWORD, NATS_TOKEN, NATS_NKEY_FILE, NATS_CREDS_FILE'
      : config.NATS_PASSWORD !== '' && config.NATS_USER === ''
        ? 'NATS_PASSWORD needs NATS_USER'
        : null
  if (issue !== null)
    throw new AppError(500, 'config.invalid', `invalid configuration: ${issue}`, {
      issues: [{ path: 'NATS_USER', message: issue }],
    })
}

/** A client certificate comes with its key. */
function checkNatsTls(config: Config): void {
  if ((config.NATS_TLS_CERT_FILE === '') !== (config.NATS_TLS_KEY_FILE === ''))
    throw new AppError(
      500,
      'config.invalid',
      'invalid configuration: NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together',
      {
        issues: [{ path: 'NATS_TLS_CERT_FILE', message: 'set both or neither' }],
      },
    )
}

function fillDevSecrets(config: Config): void {
  if (config.SUPERADMIN_EMAIL === '') config.SUPERADMIN_EMAIL = 'admin@localhost'
  if (DEV_SECRETS.every((k) => config[k] !== '')) return
  const file = resolve(config.DATA_DIR, 'secrets.json')
  let stored: Partial<Record<(typeof DEV_SECRETS)[number], string>> = {}
  if (existsSync(file)) stored = JSON.parse(readFileSync(file, 'utf8')) as typeof stored
  let changed = false
  for (const key of DEV_SECRETS) {
    if (config[key] !== '') continue
    if (stored[key] === undefined) {
      stored[key] = randomBytes(32).toString('base64url')
      changed = true
    }
    config[key] = stored[key]
  }
  if (changed) {
    mkdirSync(config.DATA_DIR, { recursive: true })
    writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 })
  }
}

/** Markdown table of every setting, for docs/configuration.md. */
export function configTable(): string {
  const rows = Object.entries(ConfigSchema.properties).map(([key, s]) => {
    const schema = s as TSchema & { default?: unknown; description?: string }
    const def = schema.default === undefined ? '' : `\`${String(schema.default)}\``
    return `| \`${key}\` | ${def} | ${schema.description ?? ''} |`
  })
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n')
}
