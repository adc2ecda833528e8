import { registerPage, type PageDef } from '../../app/pages.ts'

/* System pages: health, workers, containers, actor shards, request logs (all admin). */
const page = (path: string, title: string, load: PageDef['load']) =>
  registerPage({ path, title, area: 'System', admin: true, load })

page('/system/health', 'Health', () => import('./Health.tsx'))
page('/system/workers', 'Workers', () => import('./Workers.tsx'))
page('/system/containers', 'Containers', () => import('./Containers.tsx'))
page('/system/actors', 'Actor shards', () => import('./Actors.tsx'))
page('/system/request-logs', 'Request logs', () => import('./RequestLogs.tsx'))
