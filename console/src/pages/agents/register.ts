import { registerPage } from '../../app/pages.ts'

registerPage({ path: '/agents', title: 'Agents', area: 'Work', load: () => import('./AgentsPage.tsx') })
