import { registerPage } from '../../app/pages.ts'

registerPage({ path: '/files', title: 'Files', area: 'Work', load: () => import('./FilesPage.tsx') })
