import { registerPage } from '../../app/pages.ts'
import '../work/work.css'

/* Jobs and executions with their live status. */
registerPage({ path: '/jobs', title: 'Jobs', area: 'Build', load: () => import('./JobsPage.tsx') })
