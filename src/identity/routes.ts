import {
  AuthInfo,
  AuthUser,
  CheckPermissionsBody,
  CheckPermissionsResult,
  ExchangeBody,
  ExchangeResult,
  LoginAnswer,
  LoginBody,
  LoginTokens,
  RefreshBody,
  Tokens,
  VerifyOtpBody,
} from '../../schemas/identity.ts'
import { defineRoute, type RouteDef } from '../api/route.ts'

/* The `/auth` routes; runtime surface. The shapes live in schemas/identity.ts. */
const open = { surface: 'runtime' as const, tags: ['Auth'], auth: false as const, target: 'rpc' as const }
const authed = { ...open, auth: true as const }

export const IDENTITY_ROUTES = {
  authInfo: defineRoute({
    ...open,
    id: 'auth.info',
    method: 'GET',
    path: '/auth/info',
    summary: 'The login mode',
    response: AuthInfo,
  }),
  authLogin: defineRoute({
    ...open,
    id: 'auth.login',
    clientIp: true,
    method: 'POST',
    path: '/auth/login',
    summary:
      'Log in: password mode answers tokens; otp modes email a code and answer a session id (unknown emails get the same answer)',
    body: LoginBody,
    response: LoginAnswer,
    errors: [401, 422, 429],
  }),
  authVerifyOtp: defineRoute({
    ...open,
    id: 'auth.verify-otp',
    clientIp: true,
    method: 'POST',
    path: '/auth/verify-otp',
    summary: 'Exchange an emailed code for tokens; OTP_MAX_ATTEMPTS wrong guesses invalidate it',
    body: VerifyOtpBody,
    response: LoginTokens,
    errors: [401, 422, 429],
  }),
  authRefresh: defineRoute({
    ...open,
    id: 'auth.refresh',
    method: 'POST',
    path: '/auth/refresh',
    summary: 'Rotate a refresh token (a reused one revokes its family)',
    body: RefreshBody,
    response: Tokens,
    errors: [401],
  }),
  authLogout: defineRoute({
    ...open,
    id: 'auth.logout',
    method: 'POST',
    path: '/auth/logout',
    summary: 'Revoke a refresh token and its family',
    body: RefreshBody,
    status: 204,
  }),
  authMe: defineRoute({
    ...authed,
    id: 'auth.me',
    method: 'GET',
    path: '/auth/me',
    summary: 'The authenticated user',
    response: AuthUser,
    errors: [401],
  }),
  authExchange: defineRoute({
    ...authed,
    id: 'auth.exchange',
    method: 'POST',
    path: '/auth/token/exchange',
    summary:
      'Tokens for an external identity (needs platform.auth.exchange:all); auto-provisions with TOKEN_EXCHANGE_DEFAULT_ROLE',
    body: ExchangeBody,
    response: ExchangeResult,
    errors: [401, 403, 404],
  }),
  authCheckPermissions: defineRoute({
    ...authed,
    id: 'auth.check-permissions',
    method: 'POST',
    path: '/auth/check-permissions',
    summary: 'Whether the caller holds permissions',
    body: CheckPermissionsBody,
    response: CheckPermissionsResult,
    errors: [401, 422],
  }),
}

export function identityRoutes(): RouteDef[] {
  return Object.values(IDENTITY_ROUTES)
}
