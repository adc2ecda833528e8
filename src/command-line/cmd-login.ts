import { optionText, type ParsedArgs } from './args.ts'
import { ApiError, createClient, DEFAULT_URL } from './client.ts'
import { credentialsPath, forgetCredentials, readCredentials, writeCredentials } from './credentials.ts'
import { askSecret, lineReader, type Io } from './io.ts'

/*
 * `login`, `logout`, `whoami`. Login follows the platform's AUTH_MODE (`GET /auth/info`):
 * `password` answers tokens for `{email, password}`; `otp` emails a code for `{email}`;
 * `password+otp` wants both. `--token` / `--api-key` store a credential made elsewhere (checked
 * with `GET /auth/me` first, so a typo is not stored).
 */

interface LoginTokens {
  access_token: string
  refresh_token: string
  user?: { email?: string }
}
interface OtpStarted {
  session_id: string
  message: string
}

async function ask(prompt: string): Promise<string> {
  const r = lineReader()
  try {
    const line = await r.ask(prompt)
    if (line === null || line.trim() === '') throw new Error(`no answer to "${prompt.trim()}"`)
    return line.trim()
  } finally {
    r.close()
  }
}

export async function login(a: ParsedArgs, io: Io): Promise<number> {
  const envUrl = process.env['PLATFORM_URL'] === '' ? undefined : process.env['PLATFORM_URL']
  const url = (optionText(a, 'url') ?? envUrl ?? readCredentials()?.url ?? DEFAULT_URL).replace(/\/+$/, '')
  const given = optionText(a, 'token') ?? optionText(a, 'api-key')
  if (given !== undefined) {
    const me = await fetch(`${url}/auth/me`, { headers: { authorization: `Bearer ${given}` } })
    if (!me.ok) throw new ApiError(`the platform at ${url} refused the credential (${String(me.status)})`, me.status)
    const user = (await me.json()) as { email?: string }
    writeCredentials({ url, token: given })
    io.err(`Logged in to ${url} as ${user.email ?? "the key's owner"} (stored in ${credentialsPath()})\n`)
    return 0
  }
  const client = createClient({ url, anonymous: true })
  const { auth_mode: mode } = await client.json<{ auth_mode: string }>('GET', '/auth/info')
  const email = optionText(a, 'email') ?? (await ask('Email: '))
  const body: { email: string; password?: string } = { email }
  if (mode.includes('password')) {
    const password = optionText(a, 'password') ?? process.env['PLATFORM_PASSWORD'] ?? (await askSecret('Password: '))
    if (password === null || password === '') throw new Error('no password given')
    body.password = password
  }
  let answer = await client.json<LoginTokens | OtpStarted>('POST', '/auth/login', body)
  if ('session_id' in answer) {
    io.err(`${answer.message}\n`)
    const code = optionText(a, 'code') ?? (await ask('Code: '))
    answer = await client.json<LoginTokens>('POST', '/auth/verify-otp', {
      session_id: answer.session_id,
      otp_code: code,
    })
  }
  writeCredentials({ url, token: answer.access_token, refresh: answer.refresh_token })
  io.err(`Logged in to ${url} as ${answer.user?.email ?? email} (stored in ${credentialsPath()})\n`)
  return 0
}

export async function logout(_a: ParsedArgs, io: Io): Promise<number> {
  const c = readCredentials()
  if (c?.refresh !== undefined) {
    // revoking is best effort: the local credentials go either way
    await fetch(`${c.url}/auth/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: c.refresh }),
    }).catch(() => undefined)
  }
  forgetCredentials()
  io.err(c === null ? 'Not logged in.\n' : `Logged out of ${c.url}.\n`)
  return 0
}

export async function whoami(a: ParsedArgs, io: Io): Promise<number> {
  const client = createClient({
    ...(optionText(a, 'url') === undefined ? {} : { url: optionText(a, 'url') as string }),
  })
  const me = await client.json<{ email?: string; id?: string; roles?: unknown }>('GET', '/auth/me')
  if (optionText(a, 'output') === 'json') io.out(`${JSON.stringify(me, null, 2)}\n`)
  else io.out(`${me.email ?? me.id ?? '?'} at ${client.url}\n`)
  return 0
}
