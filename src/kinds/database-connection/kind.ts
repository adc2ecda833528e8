import { DatabaseConnectionSpec } from '../../../schemas/database-connection.ts'
import { defineKind } from '../../resources/kind.ts'

export const databaseConnectionKind = defineKind({
  kind: 'database_connection',
  plural: 'database-connections',
  title: 'DatabaseConnection',
  description:
    'Connections to external databases that queries run on (admin only; password encrypted at rest and never returned).',
  spec: DatabaseConnectionSpec,
  addressing: 'named',
  updateMethod: 'PATCH',
  adminOnly: true,
  secrets: ['password'],
  // the pool bounds; that a Postgres connection leading to the platform's own database needs
  // allow_platform_database is the data feature's check (its specChecks: src/data/save-checks.ts)
  validate: async (s) => {
    const { min_pool_size: min, max_pool_size: max } = s.config
    if (min !== undefined && max !== undefined && min > max)
      return [{ path: 'config.min_pool_size', message: 'must not exceed max_pool_size' }]
    return []
  },
})
