import { registerPage } from '../../app/pages.ts'
import '../work/work.css'

/* Agents: the list, a new one, one agent (they supersede the generic /resources/agents pages in the navigation). */
registerPage({ path: '/agents', title: 'Agents', area: 'Build', load: () => import('./AgentsPage.tsx') })
registerPage({
  path: '/agents/new',
  title: 'New agent',
  area: 'Build',
  hidden: true,
  load: () => import('./AgentPage.tsx'),
})
registerPage({
  path: '/agents/:namespace/:name',
  title: 'Agent',
  area: 'Build',
  hidden: true,
  load: () => import('./AgentPage.tsx'),
})
