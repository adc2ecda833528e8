import { useCallback, useEffect, useMemo, useState } from 'react'
import { onSignedOut } from '../api/client.ts'
import { Spinner } from '../ui/index.ts'
import { SessionContext, sessionCall, type Session, type SessionUser } from './session.ts'
import { Shell } from './Shell.tsx'
import { SignIn } from './SignIn.tsx'

/** The root: asks the console server who is signed in, then shows the shell or the sign-in form. */
export function App() {
  const [me, setMe] = useState<{ user: SessionUser; isAdmin: boolean } | null | undefined>(undefined)
  const refresh = useCallback(() => {
    sessionCall<{ user: SessionUser; isAdmin: boolean } | null>('GET', '/me').then(setMe, () => setMe(null))
  }, [])
  useEffect(refresh, [refresh])
  useEffect(() => onSignedOut(() => setMe(null)), [])
  const session = useMemo<Session | null>(
    () =>
      me === null || me === undefined
        ? null
        : {
            user: me.user,
            isAdmin: me.isAdmin,
            signOut: async () => {
              await sessionCall('POST', '/logout').catch(() => undefined)
              setMe(null)
            },
          },
    [me],
  )
  if (me === undefined)
    return (
      <main id="main" className="center">
        <Spinner label="Loading the console" />
      </main>
    )
  if (session === null) return <SignIn onSignedIn={refresh} />
  return (
    <SessionContext.Provider value={session}>
      <Shell />
    </SessionContext.Provider>
  )
}
