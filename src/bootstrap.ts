import { principalCacheOf, type Principal } from './auth/principal.ts'
import { hashPassword, verifyPassword } from './auth/password.ts'
import type { Config } from './kernel/config.ts'
import type { Logger } from './kernel/log.ts'
import { Type as T } from '@sinclair/typebox'
import { sql, type Db } from './platform/db.ts'
import { oneRow, rowType } from './platform/typed-rows.ts'
import { agentKind } from './kinds/agent/kind.ts'
import type { ResourceService } from './resources/service.ts'

/*
 * What exists after every start: the default roles, the superadmin (from SUPERADMIN_EMAIL) and the
 * default agent `default/default`. Idempotent; roles an admin has edited are left as they are.
 */
const UserIdRow = rowType(T.Object({ id: T.String() }, { title: 'superadmin id' }))
const PasswordRow = rowType(
  T.Object({ password_hash: T.Union([T.String(), T.Null()]) }, { title: 'superadmin password' }),
)
const NAMESPACED = [
  'agents',
  'functions',
  'skills',
  'queries',
  'collections',
  'templates',
  'components',
  'stores',
  'connectors',
  'mcp-servers',
  'manifests',
  'secrets',
]

export const DEFAULT_ROLES: Record<string, { description: string; permissions: string[] }> = {
  Admins: { description: 'everything', permissions: ['platform.*:all'] },
  Users: {
    description: 'own resources, chat with own agents and the default agent, execute own functions',
    permissions: [
      ...NAMESPACED.flatMap((r) => ['create', 'read', 'update', 'delete'].map((a) => `platform.${r}/*/*.${a}:own`)),
      'platform.agents/*/*.chat:own',
      'platform.functions/*/*.execute:own',
      // the states of one's own stores (src/states/access.ts)
      'platform.stores/*/*.read_state:own',
      'platform.stores/*/*.write_state:own',
      'platform.templates/*/*.send:own',
      // verbs of their own beside create/read/update/delete (migration 0024 gave them to existing roles)
      'platform.templates/*/*.render:own',
      'platform.collections/*/*.upload:own',
      'platform.collections/*/*.download:own',
      'platform.connectors/*/*.execute:own',
      'platform.mcp-servers/*/*.use:own',
      'platform.queries/*/*.execute:own',
      // webhooks, schedules and database triggers are not namespaced (src/webhooks/, src/schedules/, src/db-triggers/)
      ...['webhooks', 'schedules', 'database-triggers'].flatMap((r) =>
        ['create', 'read', 'update', 'delete'].map((a) => `platform.${r}.${a}:own`),
      ),
      'platform.dependencies.create:own',
      // claim a free namespace explicitly (docs/security.md#access-control); creating a resource claims one too
      'platform.namespaces/*.create:own',
      'platform.agents/default/default.read:all',
      'platform.agents/default/default.chat:all',
    ],
  },
  GuestUsers: {
    description: 'chat with the default agent',
    permissions: ['platform.agents/default/default.read:all', 'platform.agents/default/default.chat:all'],
  },
}

export interface BootstrapResult {
  superadmin: Principal
}

export async function bootstrap(deps: {
  db: Db
  config: Config
  log: Logger
  resources: ResourceService
}): Promise<BootstrapResult> {
  const { db, config, log } = deps
  for (const [name, role] of Object.entries(DEFAULT_ROLES)) {
    const perms = Object.fromEntries(role.permissions.map((p) => [p, true]))
    await db.query(sql.unsafe`insert into roles (name, description, permissions) values (${name}, ${role.description}, ${sql.jsonb(perms)})
      on conflict (name) do nothing`)
  }
  const email = config.SUPERADMIN_EMAIL.trim().toLowerCase()
  const inserted = await db.maybeOneFirst(
    sql.unsafe`insert into users (email) values (${email}) on conflict do nothing returning id`,
  )
  if (inserted !== null) log.info({ email }, 'superadmin created')
  const { id: userId } = await oneRow(db, UserIdRow, sql.unsafe`select id from users where lower(email) = ${email}`)
  await db.query(
    sql.unsafe`insert into user_roles (user_id, role_id) select ${userId}::uuid, id from roles where name = 'Admins' on conflict do nothing`,
  )
  if (config.SUPERADMIN_PASSWORD !== '' && config.AUTH_MODE.includes('password'))
    await applySuperadminPassword(db, log, userId, email, config.SUPERADMIN_PASSWORD)
  const superadmin: Principal = { userId, email, permissions: DEFAULT_ROLES['Admins']?.permissions ?? [] }
  const existing = await deps.resources.list(superadmin, agentKind, { namespaces: ['default'] })
  if (!existing.items.some((a) => a.name === 'default')) {
    const created = await deps.resources
      .create(superadmin, agentKind, {
        namespace: 'default',
        name: 'default',
        description: 'The default assistant.',
        system_prompt: 'You are a helpful assistant.',
      })
      .catch((err: unknown) => {
        // another process starting at the same time created it first
        if (err instanceof Error && 'code' in err && err.code === 'resource.exists') return null
        throw err
      })
    if (created !== null) log.info('default agent default/default created')
  }
  return { superadmin }
}

/*
 * SUPERADMIN_PASSWORD at start: compared with the stored password through its hash (nothing else
 * is kept). The same password: nothing is written and the superadmin's sessions stay. Another one
 * (a first start, or the setting changed before a restart): a reset — the new password replaces
 * the old, and every login session of the superadmin is revoked (its refresh tokens, and with them
 * its access tokens on the next request: src/auth/principal.ts), since whoever knew the old password
 * may hold one. Several replicas starting together: the first resets, the others find it done.
 * An empty setting leaves the stored password as it is.
 */
async function applySuperadminPassword(
  db: Db,
  log: Logger,
  userId: string,
  email: string,
  password: string,
): Promise<void> {
  const { password_hash: stored } = await oneRow(
    db,
    PasswordRow,
    sql.unsafe`select password_hash from users where id = ${userId}::uuid`,
  )
  if (stored !== null && (await verifyPassword(password, stored))) return
  await db.query(
    sql.unsafe`update users set password_hash = ${await hashPassword(password)}, updated_at = now() where id = ${userId}::uuid`,
  )
  const revoked = await db.query(
    sql.unsafe`update refresh_tokens set revoked_at = now() where user_id = ${userId}::uuid and revoked_at is null`,
  )
  await principalCacheOf(db)?.invalidateUsers([userId])
  log.info(
    { email, sessionsRevoked: revoked.rowCount },
    stored === null
      ? 'superadmin password set from SUPERADMIN_PASSWORD'
      : 'superadmin password reset from SUPERADMIN_PASSWORD: its login sessions were revoked',
  )
}
