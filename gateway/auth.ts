import { jwtVerify } from 'jose'
import { EXECUTION_SCOPE_CLAIM, type Caller } from '../src/auth/caller.ts'
import { unauthorized } from '../src/kernel/errors.ts'
import { hashApiKey, isApiKey } from '../src/auth/api-key-format.ts'
import { isUuid } from '../src/kernel/uuid.ts'

/*
 * Bearer-token verification at the edge: HS256 only (a token naming another algorithm, `none`
 * included, is refused), signature and `exp` checked by jose. Verified tokens are remembered until
 * they expire so a busy client costs one HMAC per token, not per request. Whether the user still
 * exists and what it may do is decided by the service at execution time.
 * API keys (`apk_…`, as a Bearer token or X-API-Key) are only hashed here: whether the key exists,
 * is unexpired and what it may do is resolved by the service from the NATS KV cache.
 * A correctly signed token whose claims are malformed (`sub` not a UUID, `email` not a string, an
 * unknown `scope`, an execution token without a UUID `exe` and integer `att`) is refused here
 * with 401: it can only come from a bug or a leaked key, and must not reach a database query.
 */
export interface TokenVerifier {
  verify(authorization: string): Promise<Caller>
}

export function createTokenVerifier(secret: string, options: { cacheSize?: number } = {}): TokenVerifier {
  const key = new TextEncoder().encode(secret)
  const cache = new Map<string, { caller: Caller; exp: number }>()
  const max = options.cacheSize ?? 10_000
  return {
    async verify(authorization) {
      if (!authorization.startsWith('Bearer ') && !authorization.startsWith('bearer '))
        throw unauthorized('expected a Bearer token', 'auth.bad_scheme')
      const token = authorization.slice(7).trim()
      if (isApiKey(token)) return { sub: '', via: 'api_key', keyHash: hashApiKey(token) }
      const hit = cache.get(token)
      const nowSec = Date.now() / 1000
      if (hit !== undefined && hit.exp > nowSec) return hit.caller
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          typ: 'JWT',
          requiredClaims: ['sub', 'exp'],
        })
        if (payload['type'] !== 'access') throw unauthorized('not an access token', 'auth.wrong_token_type')
        // frozen: the cached caller is shared by every request with this token, and a service in
        // this process receives it as is (src/api/local-rpc.ts), not a copy decoded from NATS
        const caller = freezeCaller(callerOf(payload))
        if (cache.size >= max) cache.clear()
        cache.set(token, { caller, exp: payload.exp as number })
        return caller
      } catch (err) {
        if (
          err instanceof Error &&
          'code' in err &&
          typeof err.code === 'string' &&
          err.code.startsWith('ERR_JWT_EXPIRED')
        ) {
          throw unauthorized('token expired', 'auth.token_expired')
        }
        if (err instanceof Error && err.name === 'AppError') throw err
        throw unauthorized('invalid token', 'auth.invalid_token')
      }
    },
  }
}

function freezeCaller(c: Caller): Caller {
  if (c.execution !== undefined) Object.freeze(c.execution)
  return Object.freeze(c)
}

function callerOf(payload: Record<string, unknown>): Caller {
  const bad = () => unauthorized('invalid token claims', 'auth.invalid_token')
  if (!isUuid(payload['sub'])) throw bad()
  if (payload['email'] !== undefined && typeof payload['email'] !== 'string') throw bad()
  const scope = payload['scope']
  const sid = payload['sid']
  if (sid !== undefined && !isUuid(sid)) throw bad()
  if (scope === undefined) {
    if (payload['exe'] !== undefined) throw bad()
    return sid === undefined ? { sub: payload['sub'], via: 'jwt' } : { sub: payload['sub'], via: 'jwt', sid }
  }
  if (scope !== EXECUTION_SCOPE_CLAIM) throw bad()
  const exe = payload['exe']
  const att = payload['att']
  if (!isUuid(exe) || typeof att !== 'number' || !Number.isInteger(att) || att < 1) throw bad()
  return { sub: payload['sub'], via: 'jwt', execution: { id: exe, attempt: att } }
}
