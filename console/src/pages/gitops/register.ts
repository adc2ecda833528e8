import { registerPage } from '../../app/pages.ts'

/* Declarative config and packages (docs/gitops.md): administrators only, as the API's routes are. */
registerPage({
  path: '/admin/config',
  title: 'Config',
  area: 'Admin',
  admin: true,
  load: () => import('./ConfigPage.tsx'),
})
registerPage({
  path: '/admin/packages',
  title: 'Packages',
  area: 'Admin',
  admin: true,
  load: () => import('./PackagesPage.tsx'),
})
