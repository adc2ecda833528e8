import { registerPage } from '../../app/pages.ts'

registerPage({ path: '/chat', title: 'Chat', area: 'Work', load: () => import('./ChatPage.tsx') })
