import { registerPage } from '../../app/pages.ts'
import '../work/work.css'

/* Collections and their files (they supersede the generic /resources/collections pages in the navigation). */
registerPage({ path: '/collections', title: 'Files', area: 'Data', load: () => import('./FilesPage.tsx') })
registerPage({
  path: '/collections/:namespace/:name',
  title: 'Files',
  area: 'Data',
  hidden: true,
  load: () => import('./FilesPage.tsx'),
})
