import { createHash, randomBytes, randomInt, randomUUID, timingSafeEqual } from 'node:crypto'
import { Type as T, type Static } from '@sinclair/typebox'
import { Nullable } from '../../schemas/common.ts'
import { AuthUser } from '../../schemas/identity.ts'
import { bind, type BoundRoute, type RouteHandler } from '../api/bind.ts'
import type { RouteDef } from '../api/route.ts'
import { hashPassword, verifyPassword } from '../auth/password.ts'
import { grantsOf, hasPermission, isValidPermission } from '../auth/permissions.ts'
import { loadUserRow, principalCacheOf, type Principal } from '../auth/principal.ts'
import { issueAccessToken } from '../auth/tokens.ts'
import type { Config } from '../kernel/config.ts'
import { forbidden, invalid, notFound, unauthorized } from '../kernel/errors.ts'
import type { Logger } from '../kernel/log.ts'
import { sql, type Db } from '../platform/db.ts'
import { maybeRow, oneRow, rowType } from '../platform/typed-rows.ts'
import type { Mailer } from './mailer.ts'
import type { RateLimiter } from './rate-limit.ts'
import { IDENTITY_ROUTES as R } from './routes.ts'

/*
 * How people log in: password, emailed one-time code, or both; refresh
 * tokens that rotate on every use and, when a used one comes back, revoke their whole family (the
 * thief's and the owner's descendants alike); token exchange for trusted identity providers.
 *
 * An unknown email gets the same answer as a known one: the same status and body, an OTP session
 * that can never verify, and the same scrypt work as a password check, so neither the response
 * nor its timing tells whether an account exists.
 */
export const EXCHANGE_PERMISSION = 'platform.auth.exchange:all'

/*
 * Holding any of these makes a user an admin for token exchange: whoever gets such a user's token
 * controls who may do what. Exchange never mints one unless TOKEN_EXCHANGE_ALLOW_ADMINS is set.
 */
const ADMIN_PERMISSIONS = [
  'platform.users.create:all',
  'platform.users.update:all',
  'platform.roles.create:all',
  'platform.roles.update:all',
  'platform.api_keys.delete:all',
  EXCHANGE_PERMISSION,
  'platform.queue.update:all',
  'platform.system.update:all',
]

export interface IdentityDeps {
  db: Db
  config: Config
  mailer: Mailer
  limiter: RateLimiter
  log: Logger
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))
const invalidCredentials = () => unauthorized('invalid email or password', 'auth.invalid_credentials')
const invalidCode = () => unauthorized('invalid or expired code', 'auth.invalid_otp')
const invalidRefresh = (code = 'auth.invalid_refresh') => unauthorized('invalid or expired refresh token', code)

/** Password hash of a password nobody has: checked against when the account is unknown, for equal timing. */
let decoyHash: Promise<string> | undefined

/* Rows as they come back (timestamps as ISO strings, jsonb parsed: src/platform/db.ts). */
const LoginUserRow = rowType(
  T.Object(
    {
      id: T.String(),
      email: T.String(),
      password_hash: Nullable(T.String()),
      is_active: T.Boolean(),
      last_login_at: Nullable(T.String()),
      created_at: T.String(),
    },
    { title: 'login user' },
  ),
)
type UserRow = Static<typeof LoginUserRow.schema>
const AuthUserRow = rowType(AuthUser)
const AccountRow = rowType(T.Object({ id: T.String(), email: T.String() }, { title: 'active user' }))
const IdRow = rowType(T.Object({ id: T.String() }, { title: 'id' }))
const OtpSessionRow = rowType(
  T.Object(
    { id: T.String(), user_id: Nullable(T.String()), code_hash: T.String(), attempts: T.Integer() },
    { title: 'OTP session' },
  ),
)
const OtpUserRow = rowType(
  T.Object({ user_id: Nullable(T.String()) }, { title: 'consumed OTP session, or a revoked session' }),
)
const RefreshRow = rowType(
  T.Object(
    {
      id: T.String(),
      family_id: T.String(),
      user_id: T.String(),
      used_at: Nullable(T.String()),
      revoked_at: Nullable(T.String()),
      live: T.Boolean(),
    },
    { title: 'refresh token' },
  ),
)
const GrantsRow = rowType(T.Object({ permissions: T.Record(T.String(), T.Unknown()) }, { title: 'role grants' }))

export function identityHandlers(d: IdentityDeps): BoundRoute[] {
  const { db, config } = d
  const findUser = async (email: string): Promise<UserRow | null> =>
    maybeRow(
      db,
      LoginUserRow,
      sql.unsafe`select id, email, password_hash, is_active, last_login_at, created_at from users where lower(email) = ${email.trim().toLowerCase()}`,
    )

  const userBody = async (userId: string) =>
    oneRow(
      db,
      AuthUserRow,
      sql.unsafe`select u.id, u.email,
        coalesce(array_agg(r.name order by r.name) filter (where r.name is not null), '{}') as roles, u.last_login_at, u.created_at
      from users u left join user_roles ur on ur.user_id = u.id left join roles r on r.id = ur.role_id
      where u.id = ${userId}::uuid group by u.id`,
    )

  const newRefresh = async (userId: string, familyId: string): Promise<string> => {
    const token = `rt_${randomBytes(32).toString('base64url')}`
    await db.query(sql.unsafe`insert into refresh_tokens (id, family_id, user_id, token_hash, expires_at)
      values (${randomUUID()}::uuid, ${familyId}::uuid, ${userId}::uuid, ${sha256(token)},
        now() + make_interval(days => ${config.REFRESH_TOKEN_EXPIRE_DAYS}))`)
    return token
  }

  // `sid`: the refresh-token family, so that revoking the family revokes its access tokens too
  const access = (u: { id: string; email: string }, family: string) =>
    issueAccessToken(config.SECRET_KEY, { sub: u.id, email: u.email, sid: family }, config.ACCESS_TOKEN_EXPIRE_MINUTES)
  /** After a family is revoked: every process drops the user's cached entry, whose revoked_sessions then include it. */
  const sessionsRevoked = async (userId: string) => principalCacheOf(db)?.invalidateUsers([userId])

  const tokensFor = async (user: { id: string; email: string }) => {
    await db.query(sql.unsafe`update users set last_login_at = now() where id = ${user.id}::uuid`)
    const family = randomUUID()
    return {
      access_token: await access(user, family),
      refresh_token: await newRefresh(user.id, family),
      token_type: 'bearer',
      expires_in: config.ACCESS_TOKEN_EXPIRE_MINUTES * 60,
      user: await userBody(user.id),
    }
  }

  const checkPassword = async (user: UserRow | null, password: string | undefined): Promise<boolean> => {
    decoyHash ??= hashPassword(randomBytes(16).toString('hex'))
    const stored = user?.password_hash ?? (await decoyHash)
    const ok = await verifyPassword(password ?? '', stored)
    return ok && user !== null && user.password_hash !== null && user.is_active && password !== undefined
  }

  const startOtp = async (email: string, user: UserRow | null) => {
    const sessionId = randomUUID()
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0')
    const known = user !== null && user.is_active
    await db.query(sql.unsafe`insert into otp_sessions (id, email, user_id, code_hash, expires_at)
      values (${sessionId}::uuid, ${email}, ${known ? user.id : null}::uuid, ${sha256(`${sessionId}:${code}`)},
        now() + make_interval(mins => ${config.OTP_EXPIRE_MINUTES}))`)
    // Sent after answering: waiting for the SMTP server would make a known address measurably
    // slower to answer than an unknown one. A failed send is logged; the user asks for a new code.
    if (known) {
      d.mailer
        .sendLoginCode(user.email, code, config.OTP_EXPIRE_MINUTES)
        .catch((err: unknown) => d.log.error({ err, session: sessionId }, 'sending the login code failed'))
    }
    return { message: 'If the address belongs to an account, a login code was sent to it.', session_id: sessionId }
  }

  const bound: BoundRoute[] = []
  const on = <T extends RouteDef>(route: T, handler: RouteHandler<T>) => bound.push(bind(route, handler))

  on(R.authInfo, async () => ({ body: { auth_mode: config.AUTH_MODE } }))

  /*
   * Password guessing is limited without letting anyone lock an account out (the superadmin's
   * above all): wrong passwords are counted per (account, address) and per account. An address
   * that failed RATE_LIMIT_LOGIN_EMAIL_MAX times against an account is refused for the rest of the
   * window; once the account has RATE_LIMIT_LOGIN_ACCOUNT_FAILURES_MAX failures from anywhere, only
   * addresses that have not failed against it this window are still checked. So the owner's
   * correct password from their own address always gets through, one address guesses at most
   * RATE_LIMIT_LOGIN_EMAIL_MAX times, and a spread-out attack at most the account budget plus one
   * guess per further address — on top of RATE_LIMIT_LOGIN_IP_MAX requests per address.
   */
  const guessAllowed = async (email: string, address: string): Promise<void> => {
    const fromHere = await d.limiter.peek('login-fail-pair', `${email} ${address}`)
    if (fromHere >= config.RATE_LIMIT_LOGIN_EMAIL_MAX) throw d.limiter.limited()
    if (
      fromHere > 0 &&
      (await d.limiter.peek('login-fail-email', email)) >= config.RATE_LIMIT_LOGIN_ACCOUNT_FAILURES_MAX
    )
      throw d.limiter.limited()
  }
  const guessFailed = async (email: string, address: string): Promise<void> => {
    await Promise.all([
      d.limiter.record('login-fail-pair', `${email} ${address}`),
      d.limiter.record('login-fail-email', email),
    ])
  }

  on(R.authLogin, async ({ body, request }) => {
    const email = body.email.trim().toLowerCase()
    await d.limiter.hit('login-ip', request.clientIp, config.RATE_LIMIT_LOGIN_IP_MAX)
    // Each request in otp mode mails a code: there the limit per email counts requests (no mail flood).
    if (config.AUTH_MODE === 'otp') await d.limiter.hit('login-email', email, config.RATE_LIMIT_LOGIN_EMAIL_MAX)
    else await guessAllowed(email, request.clientIp)
    const user = await findUser(email)
    if (config.AUTH_MODE === 'otp') return { body: await startOtp(email, user) }
    if (body.password === undefined)
      throw invalid('password is required in this login mode', [{ path: 'password', message: 'required' }])
    // checkPassword is false for an unknown user; the null test only tells the type checker
    if (!(await checkPassword(user, body.password)) || user === null) {
      await guessFailed(email, request.clientIp)
      throw invalidCredentials()
    }
    if (config.AUTH_MODE === 'password') return { body: await tokensFor(user) }
    return { body: await startOtp(email, user) }
  })

  on(R.authVerifyOtp, async ({ body, request }) => {
    await d.limiter.hit('otp-ip', request.clientIp, config.RATE_LIMIT_OTP_IP_MAX)
    const s = await maybeRow(
      db,
      OtpSessionRow,
      sql.unsafe`select id, user_id, code_hash, attempts from otp_sessions
      where id = ${body.session_id}::uuid and consumed_at is null and expires_at > now() and attempts < ${config.OTP_MAX_ATTEMPTS}`,
    )
    if (s === null) throw invalidCode()
    const matches = sameText(s.code_hash, sha256(`${body.session_id}:${body.otp_code}`))
    if (!matches || s.user_id === null) {
      // Reaching OTP_MAX_ATTEMPTS wrong guesses invalidates the code.
      await db.query(sql.unsafe`update otp_sessions set attempts = attempts + 1,
        consumed_at = case when attempts + 1 >= ${config.OTP_MAX_ATTEMPTS} then now() else consumed_at end where id = ${body.session_id}::uuid`)
      throw invalidCode()
    }
    const used = await maybeRow(
      db,
      OtpUserRow,
      sql.unsafe`update otp_sessions set consumed_at = now() where id = ${body.session_id}::uuid and consumed_at is null returning user_id`,
    )
    if (used === null) throw invalidCode()
    const user = await maybeRow(
      db,
      AccountRow,
      sql.unsafe`select id, email from users where id = ${used.user_id}::uuid and is_active`,
    )
    if (user === null) throw invalidCode()
    return { body: await tokensFor(user) }
  })

  on(R.authRefresh, async ({ body: { refresh_token: token } }) => {
    const row = await maybeRow(
      db,
      RefreshRow,
      sql.unsafe`select id, family_id, user_id, used_at, revoked_at, expires_at > now() as live from refresh_tokens where token_hash = ${sha256(token)}`,
    )
    if (row === null || row.revoked_at !== null || !row.live) throw invalidRefresh()
    const family = row.family_id
    // Rotation: exactly one use per token; a second use is a stolen token being replayed.
    const claimed = await maybeRow(
      db,
      IdRow,
      sql.unsafe`update refresh_tokens set used_at = now() where id = ${row.id}::uuid and used_at is null returning id`,
    )
    if (claimed === null) {
      await db.query(
        sql.unsafe`update refresh_tokens set revoked_at = now() where family_id = ${family}::uuid and revoked_at is null`,
      )
      await sessionsRevoked(row.user_id)
      d.log.warn({ family, user: row.user_id }, 'refresh token reused: its family is revoked')
      throw invalidRefresh('auth.refresh_reused')
    }
    const u = await maybeRow(
      db,
      AccountRow,
      sql.unsafe`select id, email from users where id = ${row.user_id}::uuid and is_active`,
    )
    if (u === null) throw invalidRefresh()
    return {
      body: {
        access_token: await access(u, family),
        refresh_token: await newRefresh(u.id, family),
        token_type: 'bearer',
        expires_in: config.ACCESS_TOKEN_EXPIRE_MINUTES * 60,
      },
    }
  })

  on(R.authLogout, async ({ body: { refresh_token: token } }) => {
    const revoked = await maybeRow(
      db,
      OtpUserRow,
      sql.unsafe`with r as (update refresh_tokens set revoked_at = now() where revoked_at is null
      and family_id = (select family_id from refresh_tokens where token_hash = ${sha256(token)}) returning user_id)
      select distinct user_id::text as user_id from r`,
    )
    // The session's access tokens stop working on the next request, everywhere (not at their expiry).
    if (revoked !== null && revoked.user_id !== null) await sessionsRevoked(revoked.user_id)
    return { status: 204 }
  })

  on(R.authMe, async ({ principal }) => ({ body: await userBody(principal.userId) }))

  /*
   * Exchange may only hand out what the caller could do itself: every grant of the target must be
   * covered by the caller's grants, and admins (ADMIN_PERMISSIONS, or the superadmin's email) are
   * refused unless TOKEN_EXCHANGE_ALLOW_ADMINS. Checked before a user is provisioned, against the
   * default role's grants, so a refused exchange creates nobody.
   */
  const checkExchangeTarget = (p: Principal, email: string, grants: readonly string[]) => {
    const admin =
      email === config.SUPERADMIN_EMAIL.trim().toLowerCase() || ADMIN_PERMISSIONS.some((a) => hasPermission(grants, a))
    if (admin && !config.TOKEN_EXCHANGE_ALLOW_ADMINS)
      throw forbidden(
        'token exchange cannot mint tokens for admins (TOKEN_EXCHANGE_ALLOW_ADMINS)',
        'auth.exchange_admin_target',
      )
    const uncovered = grants.filter((g) => !hasPermission(p.permissions, g))
    if (uncovered.length > 0)
      throw forbidden(
        `the user holds permissions the caller does not: ${uncovered.join(', ')}`,
        'auth.exchange_wider_than_caller',
      )
  }
  const defaultRoleGrants = async (): Promise<string[]> => {
    const role = await maybeRow(
      db,
      GrantsRow,
      sql.unsafe`select permissions from roles where name = ${config.TOKEN_EXCHANGE_DEFAULT_ROLE}`,
    )
    return role === null ? [] : grantsOf(role.permissions)
  }

  on(R.authExchange, async ({ principal: p, body }) => {
    // user code never turns its execution token into a full, long-lived login
    if (p.executionId !== undefined)
      throw forbidden('an execution token cannot exchange tokens', 'auth.execution_token')
    if (!hasPermission(p.permissions, EXCHANGE_PERMISSION)) throw forbidden(`requires ${EXCHANGE_PERMISSION}`)
    const email = body.email.trim().toLowerCase()
    let user = await findUser(email)
    let provisioned = false
    if (user === null) {
      if (body.auto_provision === false) throw notFound('no user with this email', 'user.not_found')
      checkExchangeTarget(p, email, await defaultRoleGrants())
      // A concurrent exchange for the same email may win the insert; then this one just uses the user.
      const created = await maybeRow(
        db,
        IdRow,
        sql.unsafe`insert into users (email) values (${email}) on conflict do nothing returning id`,
      )
      if (created !== null) {
        await db.query(
          sql.unsafe`insert into user_roles (user_id, role_id) select ${created.id}::uuid, id from roles where name = ${config.TOKEN_EXCHANGE_DEFAULT_ROLE} on conflict do nothing`,
        )
        provisioned = true
        d.log.info({ provider: body.provider, subject: body.subject, email }, 'user provisioned by token exchange')
      }
      user = await findUser(email)
    }
    if (user === null || !user.is_active) throw forbidden('the user is deactivated', 'auth.user_inactive')
    // checked on the user's live grants (also after provisioning: a concurrent insert may have won)
    checkExchangeTarget(p, user.email.toLowerCase(), (await loadUserRow(db, user.id))?.permissions ?? [])
    const tokens = await tokensFor(user)
    return { body: { ...tokens, provisioned } }
  })

  on(R.authCheckPermissions, async ({ principal: p, body }) => {
    const bad = body.permissions.filter((x) => !isValidPermission(x))
    if (bad.length > 0)
      throw invalid(
        'invalid permission strings',
        bad.map((x) => ({ path: 'permissions', message: x })),
      )
    const checks = body.permissions.map((permission) => ({
      permission,
      has_permission: hasPermission(p.permissions, permission),
    }))
    const logic = body.logic ?? 'AND'
    const result = logic === 'AND' ? checks.every((c) => c.has_permission) : checks.some((c) => c.has_permission)
    return { body: { result, logic, checks } }
  })

  return bound
}
