/*
 * The one registry of error codes: every code the platform answers (HTTP error bodies, stream
 * `error` events, job and execution errors) is listed here with its usual HTTP status, a default
 * message and whether it is public. `AppError` refuses a code that is not registered, and
 * tests/kernel/error-codes.test.ts scans the source so that a new code cannot be written without
 * an entry. docs/errors.md's table is generated from it (`npm run cli -- error-table --write`).
 *
 * `public: false` marks codes whose detail may carry internals: a client gets the default message
 * instead of the detail (the detail stays in the logs). `surface` says where a client meets it.
 */
export type ErrorSurface = 'http' | 'stream' | 'job'

export interface ErrorCodeInfo {
  status: number
  message: string
  public: boolean
  surface: ErrorSurface
}

type Row = [status: number, message: string, surface?: ErrorSurface, isPublic?: boolean]

/** Grouped by area; keep each group sorted. A feature adds its own as `errorCodes` of its Feature object (src/feature/define.ts); the composition root registers them at start. */
const CODES: Record<string, Row> = {
  // platform
  internal: [500, 'internal error', 'http', false],
  'config.invalid': [500, 'the configuration is invalid'],
  'config.missing': [500, 'required settings are missing'],
  'secrets.undecryptable': [500, 'a stored secret could not be decrypted'],
  'service.database_unavailable': [503, 'the database is unavailable right now; retry shortly'],
  'service.timeout': [504, 'the service did not answer in time'],
  'service.unavailable': [503, 'no service is answering right now; retry shortly'],
  // declarative config and packages: the documents (src/gitops/)
  'config.dangling_reference': [422, 'a resource refers to one that is neither in the document nor on the platform'],
  'config.invalid_document': [422, 'the document does not have the shape of its kind'],
  'config.invalid_yaml': [422, 'the document is not valid YAML'],
  'config.missing_variable': [422, 'the document uses an environment variable that is not set'],
  'config.reference_cycle': [422, 'resources of the document refer to each other in a cycle'],
  'config.too_deep': [422, 'the document is nested too deeply'],
  'config.too_large': [413, 'the document is larger than CONFIG_MAX_BYTES'],
  'config.too_many_aliases': [422, 'the document expands too many YAML aliases'],
  'config.unknown_key': [422, 'the document has a key its kind does not know'],
  'package.conflict': [409, 'the package would overwrite an item another package or the config manages'],
  'package.forbidden_section': [422, 'packages may not hold roles, users, LLM providers or database connections'],
  'package.install_failed': [422, 'the package could not be applied'],
  'package.not_found': [404, 'no package of that name is installed'],
  'package.variable_invalid': [422, "a package variable's value does not match its declaration"],
  'package.variable_required': [422, 'a required package variable has no value'],
  'package.variable_undeclared': [422, 'the package uses a variable it does not declare'],
  'package.variable_unknown': [422, 'a value was given for a variable the package does not declare'],
  // requests and routes
  'request.bad': [400, 'bad request'],
  'request.invalid': [422, 'the request is invalid'],
  'request.invalid_text': [400, 'the request holds text that cannot be stored'],
  'request.malformed_json': [400, 'the body is not valid JSON'],
  'request.too_deep': [400, 'the body is nested too deeply'],
  'request.too_large': [413, 'the body is too large'],
  'request.unsupported_media_type': [415, 'unsupported content type'],
  'route.method_not_allowed': [405, 'method not allowed'],
  'route.not_found': [404, 'no such route'],
  // the console server (src/console/): its own refusals; everything else is the API's answer passed on
  'console.cross_site': [403, 'the console refuses an unsafe request that did not come from the console page'],
  'console.signed_out': [401, 'not signed in to the console'],
  'console.upstream_unavailable': [502, 'the platform API did not answer the console'],
  // authentication and access
  'api_key.not_found': [404, 'API key not found'],
  'api_key.wider_than_owner': [403, "an API key cannot hold more than its owner's permissions"],
  'auth.admin_only': [403, 'admin only'],
  'auth.api_key_expired': [401, 'the API key has expired'],
  'auth.bad_scheme': [401, 'unsupported authorization scheme'],
  'auth.exchange_admin_target': [403, 'token exchange cannot target an administrator'],
  'auth.exchange_wider_than_caller': [403, 'token exchange cannot grant more than the caller holds'],
  'auth.execution_ended': [401, 'the execution this token belongs to has ended'],
  'auth.execution_token': [403, 'not allowed with an execution token'],
  'auth.forbidden': [403, 'not allowed'],
  'auth.invalid_api_key': [401, 'invalid API key'],
  'auth.invalid_credentials': [401, 'invalid credentials'],
  'auth.invalid_otp': [401, 'invalid or expired code'],
  'auth.invalid_refresh': [401, 'invalid or expired refresh token'],
  'auth.invalid_token': [401, 'invalid token'],
  'auth.rate_limited': [429, 'too many attempts; retry later'],
  'auth.refresh_reused': [401, 'the refresh token was already used; the login is revoked'],
  'auth.session_revoked': [401, 'the session of this token was logged out'],
  'auth.token_expired': [401, 'the token has expired'],
  'auth.unauthorized': [401, 'authentication required'],
  'auth.user_inactive': [401, 'the user is inactive'],
  'auth.wrong_token_type': [401, 'wrong token type'],
  'role.exists': [409, 'the role already exists'],
  'role.not_found': [404, 'role not found'],
  'user.exists': [409, 'the user already exists'],
  'user.not_found': [404, 'user not found'],
  // resources and namespaces
  'namespace.exists': [409, 'the namespace already exists'],
  'namespace.forbidden': [403, 'not allowed in this namespace'],
  'namespace.not_empty': [409, 'the namespace still holds resources'],
  'namespace.not_found': [404, 'namespace not found'],
  'namespace.not_member': [404, 'not a member of the namespace'],
  'namespace.not_owner': [403, 'only the namespace owner may do this'],
  'resource.admin_field': [403, 'only administrators may set this field'],
  'resource.conflict': [409, 'conflict'],
  'resource.exists': [409, 'the resource already exists'],
  'resource.not_found': [404, 'resource not found'],
  // functions, jobs and the queue
  'callback.disabled': [400, 'callbacks are disabled'],
  'container.not_found': [404, 'container not found'],
  'dependency.exists': [409, 'the dependency already exists'],
  'dependency.not_allowed': [422, 'the dependency is not allowed'],
  'dependency.not_found': [404, 'dependency not found'],
  'dlq.not_found': [404, 'no such dead letter entry'],
  'execution.not_found': [404, 'execution not found'],
  'function.error': [500, 'the function raised an error', 'job'],
  'function.inactive': [409, 'the function is inactive'],
  'function.invalid_input': [422, "the input does not match the function's input_schema"],
  'function.not_found': [404, 'the function was deleted', 'job'],
  'function.output_invalid': [500, 'the result does not match output_schema', 'job'],
  'function.timeout': [504, 'the function ran out of time', 'job'],
  'job.already_finished': [409, 'the job has already finished'],
  'job.cancelled': [409, 'the job was cancelled', 'job'],
  'job.depth_exceeded': [422, 'too many nested executions'],
  'job.delay_too_long': [422, 'delay_seconds outlives the job state (JOB_RESULT_TTL_HOURS)'],
  'job.failed': [500, 'the job failed', 'job'],
  'job.invalid': [500, 'a job without what it needs to run', 'job'],
  'job.not_completed': [409, 'the job has not completed'],
  'job.not_found': [404, 'job not found'],
  'job.result_expired': [404, 'the job result has expired'],
  'job.timeout': [504, 'the job ran out of time', 'job'],
  'job.worker_lost': [500, 'the worker running the job was lost', 'job'],
  'mirror.failed': [500, 'the job state could not be recorded', 'job'],
  'queue.unavailable': [503, 'the queue did not accept the message'],
  'result.unstorable': [500, 'the result holds text that cannot be stored', 'job'],
  'sandbox.disabled': [422, 'function execution is disabled (SANDBOX_EXECUTOR=disabled)'],
  'sandbox.no_workers': [409, 'no sandbox worker is running'],
  'sandbox.not_applied': [
    504,
    'no worker process confirmed the change in time (the pool actor keeps it; they converge to it)',
  ],
  'sandbox.scale_failed': [409, 'scaling the sandboxes failed'],
  // collections and files (src/files/)
  'file.collection_full': [413, 'the collection has reached max_total_size_gb'],
  'file.exists': [409, 'a file of that name already exists'],
  'file.filter_failed': [502, 'the content filter did not give a usable answer'],
  'file.invalid_form': [422, 'not a readable multipart/form-data body'],
  'file.invalid_metadata': [422, "the file metadata does not match the collection's metadata_schema"],
  'file.invalid_name': [422, 'not a plain file name'],
  'file.missing': [422, 'the form has no file part'],
  'file.not_found': [404, 'file not found'],
  'file.rejected': [422, 'the content filter rejected the file'],
  'file.too_large': [413, 'the file is larger than this upload may take'],
  // chats, agents, turns
  'actor.bad_key': [422, 'bad actor key'],
  'actor.invalid_message': [422, 'invalid actor message'],
  'actor.unknown_message': [422, 'the actor protocol has no message of this name'],
  'agent.delegation_failed': [502, 'the delegated agent did not answer', 'stream'],
  'agent.not_found': [404, 'the agent no longer exists', 'stream'],
  'agent.output_invalid': [422, "the agent's answer does not match its output_schema (after one retry)", 'stream'],
  'chat.approval_decided': [409, 'the approval was already decided'],
  'chat.approval_not_found': [404, 'approval not found'],
  'chat.approval_unknown': [404, 'no such tool call in this chat', 'stream'],
  'chat.follow_up_refused': [
    409,
    'the scheduled follow-up message was not sent (the chat was archived, or its agent no longer offers schedule_message)',
    'job',
  ],
  'chat.invalid_input': [422, 'invalid chat input'],
  'chat.not_found': [404, 'chat not found'],
  'chat.stream_not_found': [404, 'the chat has no active stream'],
  'chat.stream_abandoned': [
    499,
    'every client left the stream and none came back within SSE_RECONNECT_WINDOW_SECONDS: the turn was cancelled',
    'stream',
  ],
  'chat.turn_cancelled': [
    499,
    "the turn was cancelled: its chat's owner stopped it (POST /chats/{id}/cancel) or an admin cancelled its job",
    'stream',
  ],
  'chat.turn_failed': [502, 'the turn failed'],
  'chat.turn_timeout': [504, 'the turn did not end in time'],
  'stream.timeout': [504, 'no event within the idle timeout', 'stream'],
  'stream.unavailable': [503, 'the event stream is unavailable; reconnect with Last-Event-ID', 'stream'],
  'turn.failed': [502, 'the agent turn failed', 'stream'],
  'turn.too_many_tool_rounds': [502, 'stopped after MAX_TOOL_ITERATIONS tool rounds', 'stream'],
  'turn.worker_lost': [502, 'the worker running this turn was lost', 'stream'],
  // usage and budgets (src/usage/)
  'usage.daily_budget_exhausted': [
    429,
    "the user's daily token budget (USAGE_DAILY_TOKEN_BUDGET) is used up; it resets at 00:00 UTC",
  ],
  // components (src/components/)
  'component.bundle_too_large': [422, 'the compiled bundle is larger than COMPONENT_MAX_BUNDLE_BYTES'],
  'component.compile_failed': [422, 'the component source does not compile'],
  'component.input_invalid': [422, "the input does not match the component's input_schema"],
  'component.not_shareable': [409, 'a private component cannot be shared by link; set visibility to shared or public'],
  'component.proxy_not_enabled': [403, "the target is not in the component's enabled lists"],
  'component.proxy_unavailable': [501, 'this proxy area is not available on this platform'],
  'component.share_exhausted': [410, 'the share link has reached its view limit'],
  'component.share_expired': [410, 'the share link has expired'],
  'component.share_not_found': [404, 'share link not found'],
  'component.ticket_invalid': [401, 'the view ticket is unknown or has expired; reload the page'],
  // webhooks and schedules (src/webhooks/, src/schedules/)
  'schedule.exists': [409, 'you already have a schedule of this name'],
  'schedule.invalid_cron': [422, 'the cron expression is invalid'],
  'schedule.interval_too_short': [
    422,
    'the cron expression fires more often than SCHEDULE_MIN_INTERVAL_SECONDS allows',
  ],
  'schedule.invalid_timezone': [422, 'not an IANA time zone'],
  'schedule.not_found': [404, 'schedule not found'],
  'webhook.exists': [409, 'a webhook already uses this path'],
  'webhook.function_error': [502, "the webhook's function failed"],
  'webhook.function_timeout': [504, "the webhook's function did not finish in time"],
  'webhook.not_found': [404, 'no webhook at this path'],
  'webhook.signature_expired': [
    401,
    'the X-Webhook-Timestamp of a signed webhook call is outside WEBHOOK_SIGNATURE_TOLERANCE_SECONDS',
  ],
  'webhook.signature_invalid': [401, 'a signed webhook call without a valid X-Webhook-Timestamp / X-Webhook-Signature'],
  // database triggers (src/db-triggers/)
  'db_trigger.column_not_found': [422, 'the poll column does not exist in the table (or cannot be seen)'],
  'db_trigger.connection_forbidden': [403, "the trigger's owner may not use the database connection"],
  'db_trigger.exists': [409, 'you already have a database trigger of this name'],
  'db_trigger.not_found': [404, 'database trigger not found'],
  'db_trigger.operations_undetectable': [
    422,
    'the table cannot tell the operation the trigger asks for from the other (poll a sequence column, name a created_column, or ask for both)',
  ],
  'db_trigger.row_too_large': [422, 'one row is larger than DB_TRIGGER_MAX_BATCH_BYTES'],
  'db_trigger.unsupported_column': [422, 'the poll column is not of a type a bookmark can be kept for'],
  'db_trigger.unsupported_connection': [422, 'database triggers poll PostgreSQL connections only'],
  // LLM providers
  'llm.aborted': [499, 'the LLM call was aborted', 'stream'],
  'llm.bad_response': [502, 'the LLM provider answered something unreadable', 'stream'],
  'llm.connection_failed': [502, 'the LLM provider could not be reached', 'stream'],
  'llm.endpoint_refused': [502, 'the LLM provider endpoint is refused', 'stream'],
  'llm.http_error': [502, 'the LLM provider answered an error', 'stream'],
  'llm.invalid_request': [500, 'an invalid request to the LLM provider', 'stream'],
  'llm.no_model': [422, 'no model is named', 'stream'],
  'llm.no_provider': [503, 'no LLM provider is configured', 'stream'],
  'llm.provider_not_found': [422, "the agent's LLM provider does not exist or is disabled", 'stream'],
  'llm.stream_error': [502, 'the LLM provider reported an error', 'stream'],
  'llm.timeout': [504, 'the LLM provider did not answer in time', 'stream'],
  // connectors and their OAuth flows (src/connectors/)
  'connector.invalid_input': [422, 'the input does not match the operation'],
  'connector.invalid_openapi': [422, 'the OpenAPI document cannot be imported'],
  'connector.not_oauth2': [422, 'the connector does not use OAuth 2'],
  'connector.oauth_not_connected': [409, 'connect the connector with OAuth first'],
  'connector.oauth_not_found': [404, 'no OAuth connection for this connector'],
  'connector.operation_not_found': [404, 'the connector has no such operation'],
  'connector.secret_unavailable': [409, "the connector's secret is missing or its owner may not use it"],
  // remote MCP servers as agent tools (src/mcp-servers/)
  'mcp_server.not_oauth': [422, 'the MCP server does not use OAuth'],
  'mcp_server.oauth_discovery_failed': [
    502,
    "the MCP server's authorization server could not be discovered, or refused the client registration",
  ],
  'mcp_server.oauth_not_connected': [409, 'connect your account to the MCP server with OAuth first'],
  'mcp_server.oauth_not_found': [404, 'no OAuth connection to this MCP server'],
  'mcp_server.protocol_error': [502, 'the MCP server answered something that is not MCP'],
  'mcp_server.rpc_error': [502, 'the MCP server answered a JSON-RPC error'],
  'mcp_server.secret_unavailable': [409, "the MCP server's secret is missing or its owner may not use it"],
  'mcp_server.timeout': [504, 'the MCP server did not answer in time'],
  'mcp_server.unauthorized': [502, 'the MCP server refused the credentials'],
  'oauth.browser_mismatch': [403, 'the OAuth callback belongs to a flow started in another browser'],
  'oauth.denied': [400, 'the provider denied the authorization'],
  'oauth.invalid_state': [400, 'unknown, expired or already used OAuth state'],
  'oauth.token_failed': [502, 'the provider refused the token request'],
  // outbound HTTP (callbacks, connectors, providers)
  'outbound.aborted': [499, 'the request was aborted'],
  'outbound.connect_failed': [502, 'the remote host could not be reached'],
  'outbound.host_not_allowed': [400, 'the host is not in the allowlist'],
  'outbound.invalid_url': [400, 'not a valid URL'],
  'outbound.not_https': [400, 'the URL must use HTTPS'],
  'outbound.private_address': [400, 'the host resolves to a non-public address'],
  'outbound.response_too_large': [502, 'the response is too large'],
  'outbound.timeout': [504, 'the remote host did not answer in time'],
  'outbound.too_many_redirects': [502, 'too many redirects'],
  // outside services: a DNS failure is its own answer, never mistaken for the platform's database
  'upstream.dns_failed': [502, 'the host name of an outside service did not resolve'],
  // stores and states
  'state.exists': [409, 'the key is already used in this store'],
  'state.forbidden': [403, 'not allowed on this store or entry'],
  'state.invalid_value': [422, 'the value does not match the store schema'],
  'state.not_found': [404, 'state entry not found'],
  'state.readonly': [403, 'the store is enabled read-only here'],
  'state.too_large': [413, 'the value is larger than STATE_MAX_VALUE_BYTES'],
  'store.not_found': [404, 'store not found'],
  // database connections and queries
  'database.connection_inactive': [409, 'the database connection is not active'],
  'database.connection_not_found': [422, "the query's database connection does not exist"],
  'database.platform_database': [
    422,
    "the connection leads to the platform's own database (allow_platform_database is not set)",
  ],
  'database.unreachable': [502, 'the database could not be reached'],
  'query.connection_forbidden': [403, "the query's owner may not use its database connection"],
  'query.failed': [422, 'the database refused the statement'],
  'query.inactive': [409, 'the query is inactive'],
  'query.invalid_input': [422, "the input does not match the query's input_schema"],
  'query.missing_parameter': [422, 'a parameter of the SQL has no value'],
  'query.output_invalid': [500, "the rows do not match the query's output_schema"],
  'query.read_only': [422, 'a read query tried to write: refused by the database'],
  'query.sql_refused': [422, "the query's SQL is not allowed for its operation"],
  'query.timeout': [504, 'the statement ran longer than its timeout'],
  // templates
  // templates, email, discovery and manifests
  'discovery.bad_app': [422, 'X-Application / app must be `<namespace>/<name>`'],
  'email.not_configured': [503, 'email is not configured (SMTP_HOST is empty)'],
  'email.send_failed': [502, 'the SMTP server did not accept the message'],
  'email.too_many_recipients': [422, 'too many recipients (TEMPLATE_EMAIL_MAX_RECIPIENTS)'],
  'template.forbidden': [422, 'the template uses something forbidden'],
  'template.invalid_variables': [422, "the variables do not match the template's variable_schema"],
  'template.render': [422, 'template rendering failed'],
  'template.syntax': [422, 'template syntax error'],
  'template.timeout': [422, 'template rendering took too long'],
  'template.too_large': [422, 'the template or its output is too large'],
  'template.undefined_variable': [422, 'the template uses an undefined variable'],
}

const registry = new Map<string, ErrorCodeInfo>(
  Object.entries(CODES).map(([code, [status, message, surface, isPublic]]) => [
    code,
    { status, message, surface: surface ?? 'http', public: isPublic ?? true },
  ]),
)
// A refused callback_url answers the outbound check's code renamed `callback.*` (functions/callback.ts), as a 400.
for (const [code, info] of [...registry]) {
  if (code.startsWith('outbound.'))
    registry.set(code.replace(/^outbound\./, 'callback.'), {
      ...info,
      status: 400,
      message: `callback_url: ${info.message}`,
    })
}

/** For the features' own codes (src/feature/collect.ts, called by the composition root only); a code registered twice with another meaning is a programming error. */
export function registerErrorCodes(codes: Record<string, ErrorCodeInfo>): void {
  for (const [code, info] of Object.entries(codes)) {
    const had = registry.get(code)
    if (had !== undefined && JSON.stringify(had) !== JSON.stringify(info))
      throw new Error(`error code ${code} is registered twice with different meanings`)
    registry.set(code, info)
  }
}

export const errorCodeInfo = (code: string): ErrorCodeInfo | undefined => registry.get(code)
export const isRegisteredErrorCode = (code: string): boolean => registry.has(code)
export const registeredErrorCodes = (): ReadonlyMap<string, ErrorCodeInfo> => registry

/** The table of docs/errors.md (`npm run cli -- error-table --write`). */
export function errorTable(): string {
  const rows = [...registry]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([code, i]) =>
        `| \`${code}\` | ${String(i.status)} | ${i.surface}${i.public ? '' : ' (internal)'} | ${i.message} |`,
    )
  return ['| Code | Status | Where | Default message |', '|---|---|---|---|', ...rows].join('\n')
}
