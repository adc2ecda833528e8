import { registerPage } from '../../app/pages.ts'
import { RESOURCES } from './kinds.ts'

/*
 * The generic pages of every resource kind: list, new, view and edit, at /resources/<plural>.
 * A kind with a page of its own at /<plural> (agents, functions, collections: the work pages)
 * keeps its generic pages reachable but out of the navigation (`supersededBy`).
 */
for (const r of RESOURCES) {
  const base = `/resources/${r.plural}`
  const one = r.addressing === 'namespaced' ? `${base}/:namespace/:name` : `${base}/:key`
  const common = { area: r.area }
  // an admin-only kind's list is left out of a plain user's navigation; its other pages stay
  // reachable and the API answers (a clear 403 for what the user may not do)
  registerPage({
    ...common,
    ...(r.adminOnly ? { admin: true } : {}),
    path: base,
    title: r.listTitle,
    supersededBy: `/${r.plural}`,
    load: () => import('./ResourceList.tsx').then((m) => ({ default: m.listPage(r.plural) })),
  })
  registerPage({
    ...common,
    path: `${base}/new`,
    title: `New ${r.title.toLowerCase()}`,
    hidden: true,
    load: () => import('./ResourceForm.tsx').then((m) => ({ default: m.formPage(r.plural, 'create') })),
  })
  registerPage({
    ...common,
    path: one,
    title: r.title,
    hidden: true,
    load: () => import('./ResourceView.tsx').then((m) => ({ default: m.viewPage(r.plural) })),
  })
  registerPage({
    ...common,
    path: `${one}/edit`,
    title: `Edit ${r.title.toLowerCase()}`,
    hidden: true,
    load: () => import('./ResourceForm.tsx').then((m) => ({ default: m.formPage(r.plural, 'edit') })),
  })
}
