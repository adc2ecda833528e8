/*
 * Dark mode: the system's preference (prefers-color-scheme) unless the user picked one with the
 * toggle; the pick is kept in localStorage (a preference, not a secret) and applied as
 * `data-theme` on <html>, which the stylesheet reads.
 */
export type Theme = 'light' | 'dark'
const KEY = 'console.theme'

export function storedTheme(): Theme | undefined {
  const v = localStorage.getItem(KEY)
  return v === 'light' || v === 'dark' ? v : undefined
}

export function currentTheme(): Theme {
  return storedTheme() ?? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light')
}

export function applyTheme(theme: Theme | undefined): void {
  if (theme === undefined) localStorage.removeItem(KEY)
  else localStorage.setItem(KEY, theme)
  document.documentElement.dataset['theme'] = theme ?? currentTheme()
}
