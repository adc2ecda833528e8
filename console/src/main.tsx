import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app/App.tsx'
import { applyTheme, storedTheme } from './app/theme.ts'
import './pages/index.ts'
import './styles.css'

/* The entry: the theme before the first paint, the pages registered, then the app. */
applyTheme(storedTheme())
const root = document.getElementById('root')
if (root !== null)
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  )
