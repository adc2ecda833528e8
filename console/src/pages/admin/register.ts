import { registerPage } from '../../app/pages.ts'

/* Admin pages: users, roles, API keys. Only admins see them (the API refuses the others anyway). */
registerPage({
  path: '/admin/users',
  title: 'Users',
  area: 'Admin',
  admin: true,
  load: () => import('./Users.tsx'),
})
registerPage({
  path: '/admin/roles',
  title: 'Roles',
  area: 'Admin',
  admin: true,
  load: () => import('./Roles.tsx'),
})
registerPage({
  path: '/admin/api-keys',
  title: 'API keys',
  area: 'Admin',
  admin: true,
  load: () => import('./ApiKeys.tsx'),
})
