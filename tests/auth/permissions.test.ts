import t from 'tap'
import { hasPermission, isValidPermission, permissionMatches } from '../../src/auth/permissions.ts'

/* The permission grammar, case by case. */
const cases: [granted: string, required: string, expected: boolean][] = [
  ['platform.*:all', 'platform.agents/default/x.read:all', true],
  ['platform.*:all', 'platform.system.read:all', true],
  ['platform.*:own', 'platform.agents/default/x.read:all', false],
  ['platform.*:own', 'platform.agents/default/x.read:own', true],
  ['platform.agents/*/*.read:all', 'platform.agents/default/x.read:own', true],
  ['platform.agents/*/*.read:all', 'platform.agents/default/x.update:all', false],
  ['platform.agents/default/*.read:all', 'platform.agents/sales/x.read:all', false],
  ['platform.agents/default/*.read:all', 'platform.agents/default/x.read:all', true],
  ['platform.agents/*/*.read:all', 'platform.agents/default.read:all', false],
  ['platform.agents/sales-*', 'platform.agents/sales-eu/x.read:all', false],
  ['platform.agents/sales-*:all', 'platform.agents/sales-eu/x.read:all', true],
  ['platform.agents/sales-*:all', 'platform.agents/support/x.read:all', false],
  ['platform.agents/default/x.*:all', 'platform.agents/default/x.chat:all', true],
  ['platform.functions/*/*.execute:own', 'platform.functions/a/b.execute:own', true],
  ['platform.functions/*/*.execute:own', 'platform.functions/a/b.execute:all', false],
  ['platform.system.read:all', 'platform.system.update:all', false],
  ['nonsense', 'platform.system.read:all', false],
  ['platform.*:root', 'platform.system.read:all', false],
]

for (const [granted, required, expected] of cases) {
  t.equal(
    permissionMatches(granted, required),
    expected,
    `${granted} ${expected ? 'covers' : 'does not cover'} ${required}`,
  )
}

t.test('lists and validity', async (t) => {
  t.ok(hasPermission(['platform.skills/*/*.read:own', 'platform.agents/*/*.read:all'], 'platform.agents/a/b.read:all'))
  t.notOk(hasPermission([], 'platform.agents/a/b.read:own'))
  t.ok(isValidPermission('platform.agents/*/*.read:own'))
  t.notOk(isValidPermission('platform.agents'))
  t.notOk(isValidPermission(':all'))
})
