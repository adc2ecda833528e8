import { Type as T, type Static } from '@sinclair/typebox'
import { Email } from './access.ts'
import { Nullable, Uuid } from './common.ts'

/* The `/auth` routes' bodies and answers; runtime surface. */
export const AuthUser = T.Object(
  {
    id: Uuid,
    email: T.String(),
    roles: T.Array(T.String()),
    last_login_at: Nullable(T.String()),
    created_at: T.String(),
  },
  { title: 'AuthUser' },
)
export type AuthUser = Static<typeof AuthUser>
export const Tokens = T.Object({
  access_token: T.String(),
  refresh_token: T.String(),
  token_type: T.Literal('bearer'),
  expires_in: T.Integer(),
})
export type Tokens = Static<typeof Tokens>
export const LoginTokens = T.Object({ ...Tokens.properties, user: AuthUser }, { title: 'LoginTokens' })
export const OtpStarted = T.Object({ message: T.String(), session_id: Uuid }, { title: 'OtpStarted' })
/** Password mode answers tokens; the otp modes answer a session id. */
export const LoginAnswer = T.Union([LoginTokens, OtpStarted])
export const RefreshBody = T.Object(
  { refresh_token: T.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
)

export const AuthInfo = T.Object({ auth_mode: T.String() })
export const LoginBody = T.Object(
  { email: Email, password: T.Optional(T.String({ maxLength: 1024 })) },
  { additionalProperties: false },
)
export const VerifyOtpBody = T.Object(
  { session_id: Uuid, otp_code: T.String({ pattern: '^[0-9]{6}$' }) },
  { additionalProperties: false },
)
export const ExchangeBody = T.Object(
  {
    provider: T.String({ minLength: 1, maxLength: 100 }),
    subject: T.String({ minLength: 1, maxLength: 300 }),
    email: Email,
    auto_provision: T.Optional(T.Boolean()),
  },
  { additionalProperties: false },
)
export const ExchangeResult = T.Object({ ...LoginTokens.properties, provisioned: T.Boolean() })
export const CheckPermissionsBody = T.Object(
  {
    permissions: T.Array(T.String({ maxLength: 300 }), { minItems: 1, maxItems: 100 }),
    logic: T.Optional(T.Union([T.Literal('AND'), T.Literal('OR')])),
  },
  { additionalProperties: false },
)
export const CheckPermissionsResult = T.Object({
  result: T.Boolean(),
  logic: T.String(),
  checks: T.Array(T.Object({ permission: T.String(), has_permission: T.Boolean() })),
})
