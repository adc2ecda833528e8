import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

/*
 * The stored login: `{url, token, refresh?}` in the user's config folder. The file holds a
 * credential, so it is written 0600 in a 0700 folder (and the modes are set again on every
 * write: a file created earlier with a looser umask is tightened).
 */

export interface Credentials {
  url: string
  /** An access token (JWT) or an API key (`apk_…`). */
  token: string
  /** The refresh token of a login; absent for a stored token or API key. */
  refresh?: string
}

/** `$XDG_CONFIG_HOME/agent-platform/credentials.json`, else `~/.config/agent-platform/credentials.json`. */
export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_CONFIG_HOME']
  const base = xdg !== undefined && xdg !== '' ? xdg : join(env['HOME'] ?? homedir(), '.config')
  return join(base, 'agent-platform', 'credentials.json')
}

export function readCredentials(path = credentialsPath()): Credentials | null {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return null
  }
  const v = JSON.parse(text) as Partial<Credentials>
  if (typeof v.url !== 'string' || typeof v.token !== 'string') return null
  return { url: v.url, token: v.token, ...(typeof v.refresh === 'string' ? { refresh: v.refresh } : {}) }
}

export function writeCredentials(c: Credentials, path = credentialsPath()): void {
  const dir = dirname(path)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  chmodSync(dir, 0o700)
  writeFileSync(path, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 })
  chmodSync(path, 0o600)
}

export function forgetCredentials(path = credentialsPath()): void {
  rmSync(path, { force: true })
}

/** The `exp` of a JWT in ms, or null (an API key, or not a JWT). */
export function tokenExpiry(token: string): number | null {
  const part = token.split('.')[1]
  if (part === undefined || token.startsWith('apk_')) return null
  try {
    const exp = (JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as { exp?: unknown }).exp
    return typeof exp === 'number' ? exp * 1000 : null
  } catch {
    return null
  }
}
