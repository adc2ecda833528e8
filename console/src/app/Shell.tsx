import { lazy, Suspense, useEffect, useMemo, useRef, useState, type ComponentType } from 'react'
import { Button, Spinner } from '../ui/index.ts'
import { Link } from './link.tsx'
import { matchPage, navigablePages, type PageDef, type PageProps } from './pages.ts'
import { useLocation } from './router.ts'
import { useSession } from './session.ts'
import { applyTheme, currentTheme } from './theme.ts'

/** Areas in navigation order; an area not listed comes after them, alphabetically. */
const AREA_ORDER = ['Build', 'Chat', 'Data', 'Integrations', 'Triggers', 'Admin', 'System']

/**
 * The signed-in frame: a skip link, the banner (product name, theme toggle, user, sign out), the
 * navigation by area and the current page in <main>. Admin pages are absent for other users; the
 * URL of one says so instead of rendering it.
 */
export function Shell() {
  const { user, isAdmin, signOut } = useSession()
  const { pathname } = useLocation()
  const [theme, setTheme] = useState(currentTheme)
  const pages = navigablePages().filter((p) => isAdmin || p.admin !== true)
  const areas = groupByArea(pages)
  const match = pathname === '/' ? undefined : matchPage(pathname)
  const mainRef = useRef<HTMLElement>(null)
  // on a phone-width screen the navigation is a menu over the page, closed again by a navigation
  const [navOpen, setNavOpen] = useState(false)
  useEffect(() => setNavOpen(false), [pathname])
  const firstPath = useRef(pathname)
  // after an in-app navigation focus moves to the page's heading (or main), so a screen reader
  // announces the new page; not on the first load, where the skip link comes first
  useEffect(() => {
    if (pathname === firstPath.current) return
    firstPath.current = ''
    const h = mainRef.current?.querySelector<HTMLElement>('h1') ?? mainRef.current
    h?.focus({ preventScroll: true })
  }, [pathname])
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          Agent Platform
        </Link>
        <div className="topbar-right">
          <Button
            className="menu-toggle"
            aria-expanded={navOpen}
            aria-controls="main-nav"
            onClick={() => setNavOpen(!navOpen)}
          >
            Menu
          </Button>
          <Button
            onClick={() => {
              const next = theme === 'dark' ? 'light' : 'dark'
              applyTheme(next)
              setTheme(next)
            }}
            aria-pressed={theme === 'dark'}
          >
            {theme === 'dark' ? 'Light mode' : 'Dark mode'}
          </Button>
          <span className="user" title={user.roles.join(', ')}>
            {user.email}
          </span>
          <Button onClick={() => void signOut()}>Sign out</Button>
        </div>
      </header>
      <nav id="main-nav" className="sidebar" aria-label="Main" data-open={navOpen}>
        {areas.map(([area, list]) => (
          <div key={area} className="nav-area">
            <h2 className="nav-title">{area}</h2>
            <ul>
              {list.map((p) => (
                <li key={p.path}>
                  <Link
                    href={p.path}
                    aria-current={match?.page.path === p.path ? 'page' : undefined}
                    className="nav-link"
                  >
                    {p.title}
                  </Link>
                </li>
              ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main" ref={mainRef} tabIndex={-1} className="main">
        {pathname === '/' ? (
          <Home pages={pages} />
        ) : match === undefined ? (
          <NotFound />
        ) : match.page.admin === true && !isAdmin ? (
          <Forbidden title={match.page.title} />
        ) : (
          <PageHost page={match.page} params={match.params} />
        )}
      </main>
    </div>
  )
}

function groupByArea(pages: readonly PageDef[]): [string, PageDef[]][] {
  const by = new Map<string, PageDef[]>()
  for (const p of pages) by.set(p.area, [...(by.get(p.area) ?? []), p])
  const rank = (a: string) => {
    const i = AREA_ORDER.indexOf(a)
    return i < 0 ? AREA_ORDER.length : i
  }
  return [...by.entries()].sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
}

/** Loads a page's chunk once (lazy) and renders it with its params. */
const lazyPages = new Map<string, ComponentType<PageProps>>()
function PageHost({ page, params }: { page: PageDef; params: Record<string, string> }) {
  const Component = useMemo(() => {
    let c = lazyPages.get(page.path)
    if (c === undefined) {
      c = lazy(page.load)
      lazyPages.set(page.path, c)
    }
    return c
  }, [page])
  return (
    <Suspense fallback={<Spinner label={`Loading ${page.title}`} />}>
      <Component params={params} />
    </Suspense>
  )
}

function Home({ pages }: { pages: PageDef[] }) {
  useEffect(() => {
    document.title = 'Console'
  }, [])
  return (
    <section className="page" aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Console
      </h1>
      <p>Everything the platform's API does, by area. Pick a page:</p>
      <ul className="home-list">
        {pages.map((p) => (
          <li key={p.path}>
            <Link href={p.path}>{p.title}</Link> <span className="muted">{p.area}</span>
          </li>
        ))}
      </ul>
    </section>
  )
}

function NotFound() {
  return (
    <section className="page" aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Page not found
      </h1>
      <p>
        There is no page at this address. <Link href="/">Go to the start page</Link>.
      </p>
    </section>
  )
}

function Forbidden({ title }: { title: string }) {
  return (
    <section className="page" aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        {title}
      </h1>
      <div className="banner banner-error" role="alert">
        This page is for administrators. Your account does not have the permission to open it; ask an administrator if
        you need it.
      </div>
    </section>
  )
}
