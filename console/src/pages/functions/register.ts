import { registerPage } from '../../app/pages.ts'

registerPage({ path: '/functions', title: 'Functions', area: 'Work', load: () => import('./FunctionsPage.tsx') })
