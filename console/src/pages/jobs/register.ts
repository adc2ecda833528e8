import { registerPage } from '../../app/pages.ts'

registerPage({ path: '/jobs', title: 'Jobs', area: 'Work', load: () => import('./JobsPage.tsx') })
