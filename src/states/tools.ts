import { KEY_PATTERN, type StatePutBody } from '../../schemas/store.ts'
import type { Principal } from '../auth/principal.ts'
import type { AgentRecord, Tool, ToolContext, ToolDeps, ToolProvider } from '../feature/tools.ts'
import { AppError } from '../kernel/errors.ts'
import { namespacesUsedBy } from '../resources/namespace-store.ts'
import { storeKind } from '../kinds/store/kind.ts'
import { canState } from './access.ts'
import { createStateService, type StateService } from './service.ts'

/*
 * The store tools an agent offers the LLM (`list_state_keys`, `retrieve_state`,
 * `save_state`, `delete_state`; one set for all of the agent's `enabled_stores`, the store named by
 * an argument). Discovery expands the agent's patterns — wildcards only within the namespaces the
 * agent's owner uses, like every other enabled_* list — and keeps the stores whose states the
 * chat's user may read; the write tools appear when at least one of them is enabled `readwrite`.
 * Every call goes through the state service as the chat's user with the entry's access, so the
 * permission is checked again when the tool runs and a write through a `readonly` store is refused.
 */
type Access = 'readonly' | 'readwrite'

/** The agent's enabled stores the principal may read, each with the widest access an entry gives it. */
async function enabledStores(d: ToolDeps, p: Principal, agent: AgentRecord): Promise<Map<string, Access>> {
  const entries = agent.enabled_stores
  if (entries.length === 0) return new Map()
  const wild = entries.some((e) => e.store.includes('*'))
  const ownerNs = wild && agent.owner_id !== null ? await namespacesUsedBy(d.db, agent.owner_id) : new Set<string>()
  // exact references only: just those stores; a wildcard needs every active store (both from memory when warm)
  const records = wild
    ? await d.resources.all(storeKind)
    : await d.resources.loadMany(
        storeKind,
        entries.map((e) => e.store),
      )
  const out = new Map<string, Access>()
  for (const record of records) {
    if (record.is_active !== true) continue
    const row = { namespace: record.namespace ?? '', name: record.name }
    const meta = { namespace: row.namespace, name: row.name, ownerId: record.owner_id ?? null }
    for (const e of entries) {
      const [ns, name] = e.store.split('/')
      const wildcard = ns === '*' || name === '*'
      if (
        (ns !== '*' && ns !== row.namespace) ||
        (name !== '*' && name !== row.name) ||
        (wildcard && !ownerNs.has(row.namespace))
      )
        continue
      if (!canState(p, meta, 'read_state')) continue
      const ref = `${row.namespace}/${row.name}`
      if (out.get(ref) !== 'readwrite') out.set(ref, e.access)
    }
  }
  return out
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

/** A failure as the tool result the model reads (its code lets it tell "missing" from "refused"). */
const failure = (err: unknown): { error: string; code?: string } =>
  err instanceof AppError
    ? { error: err.message, code: err.code }
    : { error: err instanceof Error ? err.message : String(err) }

function storeTools(states: StateService, stores: Map<string, Access>): Tool[] {
  const refs = [...stores.keys()]
  const writable = refs.filter((r) => stores.get(r) === 'readwrite')
  const single = refs.length === 1 ? refs[0] : undefined
  const storeParam = (list: string[]) => ({
    type: 'string',
    enum: list,
    description: single === undefined ? 'the store, `<namespace>/<name>`' : `the store (default ${single})`,
  })
  const required = (extra: string[]) => (single === undefined ? ['store', ...extra] : extra)
  const key = { type: 'string', pattern: KEY_PATTERN, description: 'the key: letters, digits and _ . : @ -' }

  /** The store a call names, if the agent enables it; with the access it gives. */
  const target = (args: Record<string, unknown>): { ref: string; namespace: string; name: string; access: Access } => {
    const ref = str(args['store']) ?? single
    const access = ref === undefined ? undefined : stores.get(ref)
    if (ref === undefined || access === undefined)
      throw new AppError(
        404,
        'store.not_found',
        `store ${ref ?? '(none given)'} is not enabled for this agent; enabled: ${refs.join(', ')}`,
      )
    const [namespace = '', name = ''] = ref.split('/')
    return { ref, namespace, name, access }
  }
  const run =
    (fn: (args: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>) =>
    async (args: Record<string, unknown>, ctx: ToolContext) => {
      try {
        return await fn(args, ctx)
      } catch (err) {
        return failure(err)
      }
    }
  const base = { requiresApproval: false }
  const tools: Tool[] = [
    {
      ...base,
      name: 'list_state_keys',
      description: `List the keys saved in a store (${refs.join(', ')}), optionally by key prefix or tags`,
      parameters: {
        type: 'object',
        properties: {
          store: storeParam(refs),
          prefix: { type: 'string', description: 'only keys starting with this' },
          tags: { type: 'array', items: { type: 'string' }, description: 'only entries carrying all these tags' },
        },
        required: required([]),
      },
      run: run(async (args, ctx) => {
        const s = target(args)
        const tags = Array.isArray(args['tags'])
          ? args['tags'].filter((x): x is string => typeof x === 'string').join(',')
          : undefined
        const prefix = str(args['prefix'])
        const { items, total } = await states.list(ctx.principal, s, {
          ...(prefix === undefined ? {} : { search: prefix }),
          ...(tags === undefined ? {} : { tags }),
          limit: 100,
        })
        return {
          store: s.ref,
          total,
          keys: items.map((e) => ({ key: e.key, description: e.description, tags: e.tags, updated_at: e.updated_at })),
        }
      }),
    },
    {
      ...base,
      name: 'retrieve_state',
      description: `Read the value saved under a key in a store (${refs.join(', ')})`,
      parameters: { type: 'object', properties: { store: storeParam(refs), key }, required: required(['key']) },
      run: run(async (args, ctx) => {
        const s = target(args)
        const e = await states.get(ctx.principal, s, str(args['key']) ?? '')
        return {
          store: s.ref,
          key: e.key,
          value: e.value,
          description: e.description,
          tags: e.tags,
          updated_at: e.updated_at,
        }
      }),
    },
  ]
  if (writable.length === 0) return tools
  tools.push(
    {
      ...base,
      name: 'save_state',
      description: `Save a JSON value under a key in a store (${writable.join(', ')}); replaces the value of an existing key`,
      parameters: {
        type: 'object',
        properties: {
          store: storeParam(writable),
          key,
          value: { description: 'any JSON value' },
          description: { type: 'string' },
          tags: { type: 'array', items: { type: 'string' } },
          visibility: { type: 'string', enum: ['private', 'shared'] },
          ttl_seconds: { type: 'integer', minimum: 1, description: 'forget the entry after this many seconds' },
        },
        required: required(['key', 'value']),
      },
      run: run(async (args, ctx) => {
        const s = target(args)
        const ttl = args['ttl_seconds']
        if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1))
          throw new AppError(422, 'request.invalid', 'ttl_seconds must be a positive integer')
        const tags = args['tags']
        const visibility = args['visibility']
        // a wrong type is left for the service's body check to name (422 with its path)
        const body: StatePutBody = {
          value: args['value'],
          ...(args['description'] === undefined
            ? {}
            : { description: str(args['description']) ?? String(args['description']) }),
          ...(tags === undefined ? {} : { tags: Array.isArray(tags) ? tags.map(String) : [String(tags)] }),
          ...(visibility === 'private' || visibility === 'shared' ? { visibility } : {}),
          ...(typeof ttl === 'number' ? { expires_at: new Date(Date.now() + ttl * 1000).toISOString() } : {}),
        }
        if (visibility !== undefined && body.visibility === undefined)
          throw new AppError(422, 'request.invalid', 'visibility must be private or shared')
        const { entry, created } = await states.put(ctx.principal, s, str(args['key']) ?? '', body, {
          access: s.access,
        })
        return {
          saved: true,
          created,
          store: s.ref,
          key: entry.key,
          ...(entry.warnings === undefined ? {} : { warnings: entry.warnings }),
        }
      }),
    },
    {
      ...base,
      name: 'delete_state',
      description: `Delete a key from a store (${writable.join(', ')})`,
      parameters: { type: 'object', properties: { store: storeParam(writable), key }, required: required(['key']) },
      run: run(async (args, ctx) => {
        const s = target(args)
        await states.remove(ctx.principal, s, str(args['key']) ?? '', { access: s.access })
        return { deleted: true, store: s.ref, key: str(args['key']) }
      }),
    },
  )
  return tools
}

export function stateToolProvider(d: ToolDeps): ToolProvider {
  const states = createStateService({
    db: d.db,
    config: d.config,
    resources: d.resources,
    nats: { nc: d.invoke.nc, names: d.invoke.names },
  })
  return {
    name: 'stores',
    async discover(ctx) {
      const stores = await enabledStores(d, ctx.principal, ctx.agent)
      return stores.size === 0 ? [] : storeTools(states, stores)
    },
  }
}
