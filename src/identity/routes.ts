import { Type as T } from '@sinclair/typebox'
import { Nullable, Uuid } from '../../schemas/common.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* The `/auth` routes (WIRE.md "Auth"); runtime surface. */
const Email = T.String({ format: 'email', maxLength: 320 })
const User = T.Object({ id: Uuid, email: T.String(), roles: T.Array(T.String()), last_login_at: Nullable(T.String()), created_at: T.String() }, { title: 'AuthUser' })
const Tokens = T.Object({ access_token: T.String(), refresh_token: T.String(), token_type: T.Literal('bearer'), expires_in: T.Integer() })
const LoginTokens = T.Object({ ...Tokens.properties, user: User }, { title: 'LoginTokens' })
const OtpStarted = T.Object({ message: T.String(), session_id: Uuid }, { title: 'OtpStarted' })
const Refresh = T.Object({ refresh_token: T.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })

const open = { surface: 'runtime' as const, tags: ['Auth'], auth: false as const, target: 'rpc' as const }
const authed = { ...open, auth: true as const }

export const IDENTITY_ROUTES = {
  authInfo: defineRoute({ ...open, id: 'auth.info', method: 'GET', path: '/auth/info', summary: 'The login mode', response: T.Object({ auth_mode: T.String() }) }),
  authLogin: defineRoute({
    ...open,
    id: 'auth.login',
    method: 'POST',
    path: '/auth/login',
    summary: 'Log in: password mode answers tokens; otp modes email a code and answer a session id (unknown emails get the same answer)',
    body: T.Object({ email: Email, password: T.Optional(T.String({ maxLength: 1024 })) }, { additionalProperties: false }),
    response: T.Union([LoginTokens, OtpStarted]),
    errors: [401, 422, 429],
  }),
  authVerifyOtp: defineRoute({
    ...open,
    id: 'auth.verify-otp',
    method: 'POST',
    path: '/auth/verify-otp',
    summary: 'Exchange an emailed code for tokens; OTP_MAX_ATTEMPTS wrong guesses invalidate it',
    body: T.Object({ session_id: Uuid, otp_code: T.String({ pattern: '^[0-9]{6}$' }) }, { additionalProperties: false }),
    response: LoginTokens,
    errors: [401, 422, 429],
  }),
  authRefresh: defineRoute({ ...open, id: 'auth.refresh', method: 'POST', path: '/auth/refresh', summary: 'Rotate a refresh token (a reused one revokes its family)', body: Refresh, response: Tokens, errors: [401] }),
  authLogout: defineRoute({ ...open, id: 'auth.logout', method: 'POST', path: '/auth/logout', summary: 'Revoke a refresh token and its family', body: Refresh, status: 204 }),
  authMe: defineRoute({ ...authed, id: 'auth.me', method: 'GET', path: '/auth/me', summary: 'The authenticated user', response: User, errors: [401] }),
  authExchange: defineRoute({
    ...authed,
    id: 'auth.exchange',
    method: 'POST',
    path: '/auth/token/exchange',
    summary: 'Tokens for an external identity (needs platform.auth.exchange:all); auto-provisions with TOKEN_EXCHANGE_DEFAULT_ROLE',
    body: T.Object({ provider: T.String({ minLength: 1, maxLength: 100 }), subject: T.String({ minLength: 1, maxLength: 300 }), email: Email, auto_provision: T.Optional(T.Boolean()) }, { additionalProperties: false }),
    response: T.Object({ ...LoginTokens.properties, provisioned: T.Boolean() }),
    errors: [401, 403, 404],
  }),
  authCheckPermissions: defineRoute({
    ...authed,
    id: 'auth.check-permissions',
    method: 'POST',
    path: '/auth/check-permissions',
    summary: 'Whether the caller holds permissions',
    body: T.Object({ permissions: T.Array(T.String({ maxLength: 300 }), { minItems: 1, maxItems: 100 }), logic: T.Optional(T.Union([T.Literal('AND'), T.Literal('OR')])) }, { additionalProperties: false }),
    response: T.Object({ result: T.Boolean(), logic: T.String(), checks: T.Array(T.Object({ permission: T.String(), has_permission: T.Boolean() })) }),
    errors: [401, 422],
  }),
}

export function identityRoutes(): RouteDef[] {
  return Object.values(IDENTITY_ROUTES)
}
