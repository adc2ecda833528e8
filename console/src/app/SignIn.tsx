import { useEffect, useState, type FormEvent } from 'react'
import { ApiError } from '../api/client.ts'
import { Button, ErrorBanner, Field } from '../ui/index.ts'
import { sessionCall } from './session.ts'

type Mode = 'otp' | 'password' | 'password+otp'

/**
 * Sign-in in every AUTH_MODE: `otp` asks for the email, then the emailed code; `password` for
 * email and password; `password+otp` for both, then the code. The console server makes the
 * calls and keeps the tokens (cookies this code cannot read); this form only sees "signed in".
 */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [mode, setMode] = useState<Mode | undefined>(undefined)
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [code, setCode] = useState('')
  const [otpSession, setOtpSession] = useState<{ id: string; message: string } | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  useEffect(() => {
    document.title = 'Sign in · Console'
    sessionCall<{ auth_mode: Mode }>('GET', '/info').then(
      (i) => setMode(i.auth_mode),
      (e: unknown) => setError(e),
    )
  }, [])

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      if (otpSession === undefined) {
        const body = mode === 'otp' ? { email } : { email, password }
        const r = await sessionCall<{ signed_in: true } | { session_id: string; message: string }>(
          'POST',
          '/login',
          body,
        )
        if ('session_id' in r) setOtpSession({ id: r.session_id, message: r.message })
        else onSignedIn()
      } else {
        await sessionCall('POST', '/verify', { session_id: otpSession.id, otp_code: code.trim() })
        onSignedIn()
      }
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }

  const fieldError = (name: string) => (error instanceof ApiError ? error.fieldMessage(name) : undefined)
  return (
    <main id="main" className="signin">
      <form className="card signin-card" onSubmit={(e) => void submit(e)} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in</h1>
        <ErrorBanner error={error} />
        {mode === undefined ? null : otpSession === undefined ? (
          <>
            <Field label="Email" required error={fieldError('email')}>
              {(c) => (
                <input
                  {...c}
                  name="email"
                  type="email"
                  autoComplete="username"
                  value={email}
                  onChange={(e) => setEmail(e.target.value)}
                />
              )}
            </Field>
            {mode === 'otp' ? null : (
              <Field label="Password" required error={fieldError('password')}>
                {(c) => (
                  <input
                    {...c}
                    name="password"
                    type="password"
                    autoComplete="current-password"
                    value={password}
                    onChange={(e) => setPassword(e.target.value)}
                  />
                )}
              </Field>
            )}
            <Button kind="primary" type="submit" busy={busy}>
              {mode === 'otp' ? 'Email me a code' : 'Sign in'}
            </Button>
          </>
        ) : (
          <>
            <p role="status">{otpSession.message}</p>
            <Field label="Code from the email" required help="6 digits" error={fieldError('otp_code')}>
              {(c) => (
                <input
                  {...c}
                  name="otp_code"
                  inputMode="numeric"
                  autoComplete="one-time-code"
                  pattern="[0-9]{6}"
                  value={code}
                  onChange={(e) => setCode(e.target.value)}
                />
              )}
            </Field>
            <Button kind="primary" type="submit" busy={busy}>
              Verify
            </Button>{' '}
            <Button
              onClick={() => {
                setOtpSession(undefined)
                setCode('')
                setError(undefined)
              }}
            >
              Start over
            </Button>
          </>
        )}
      </form>
    </main>
  )
}
