/*
 * What a function's execution token may do at most: its permissions are the caller's live grants
 * intersected with this list (src/auth/principal.ts). It is an allowlist, so a kind or area added
 * later is out of reach of user code until it is listed here on purpose. Left out on purpose:
 * users, roles and API keys, token exchange, secrets (values and metadata), LLM providers and
 * direct LLM calls, connectors (they hold credentials), manifests, every user's chats, queue and
 * system administration, dependency approval.
 * Routes that need no permission but must stay closed to an execution (creating an API key,
 * reading one's user record, token exchange) check `Principal.executionId` themselves.
 */
export const EXECUTION_SCOPE: readonly string[] = [
  'platform.agents/*:all',
  'platform.functions/*:all',
  'platform.skills/*:all',
  'platform.queries/*:all',
  'platform.collections/*:all',
  'platform.templates/*:all',
  'platform.components/*:all',
  'platform.stores/*:all',
  'platform.dependencies.create:own',
]
