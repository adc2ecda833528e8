import { createContext, useContext } from 'react'
import { errorOf } from '../api/client.ts'

/*
 * Who is signed in. The tokens never reach this code: the console server holds them in HttpOnly
 * cookies (docs/console.md); the page only learns the user (`GET /session/me`).
 */
export interface SessionUser {
  id: string
  email: string
  roles: string[]
  is_superadmin?: boolean
}

export interface Session {
  user: SessionUser
  isAdmin: boolean
  signOut: () => Promise<void>
}

export const SessionContext = createContext<Session | null>(null)

/** The signed-in session; pages render only inside a session, so this never returns null there. */
export function useSession(): Session {
  const s = useContext(SessionContext)
  if (s === null) throw new Error('useSession outside the signed-in shell')
  return s
}

/** Calls the console server's own session endpoints (same origin, JSON). */
export async function sessionCall<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json' } }
  if (method === 'POST') {
    init.headers = { accept: 'application/json', 'content-type': 'application/json', 'x-console-request': '1' }
    init.body = JSON.stringify(body ?? {})
  }
  const res = await fetch(`/session${path}`, init)
  if (!res.ok) {
    throw await errorOf(res)
  }
  return (res.status === 204 ? undefined : await res.json()) as T
}

let info: Promise<{ auth_mode: string; api_base: string }> | undefined

/** The sign-in mode and the API's public base (component previews load from it), asked once. */
export function sessionInfo(): Promise<{ auth_mode: string; api_base: string }> {
  info ??= sessionCall<{ auth_mode: string; api_base: string }>('GET', '/info').catch((e: unknown) => {
    info = undefined
    throw e
  })
  return info
}
