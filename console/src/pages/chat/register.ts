import { registerPage } from '../../app/pages.ts'
import '../work/work.css'

/* The chat page: the caller's chats, one chat open at /chat/<id>. */
registerPage({ path: '/chat', title: 'Chat', area: 'Chat', load: () => import('./ChatPage.tsx') })
registerPage({ path: '/chat/:id', title: 'Chat', area: 'Chat', hidden: true, load: () => import('./ChatPage.tsx') })
