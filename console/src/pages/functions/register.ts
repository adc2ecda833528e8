import { registerPage } from '../../app/pages.ts'
import '../work/work.css'

/* Functions: the list, a new one, one function with its editor, Run and history. */
registerPage({ path: '/functions', title: 'Functions', area: 'Build', load: () => import('./FunctionsPage.tsx') })
registerPage({
  path: '/functions/new',
  title: 'New function',
  area: 'Build',
  hidden: true,
  load: () => import('./FunctionPage.tsx'),
})
registerPage({
  path: '/functions/:namespace/:name',
  title: 'Function',
  area: 'Build',
  hidden: true,
  load: () => import('./FunctionPage.tsx'),
})
