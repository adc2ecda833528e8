import { randomUUID } from 'node:crypto'
import type { KV } from '@nats-io/kv'
import { WebhookCreateBody } from '../../schemas/triggers.ts'
import type { AfterCommit, ConfigCurrent, ConfigKind } from '../feature/config-kinds.ts'
import { bodyChecksum, bodyIssues } from '../feature/config-kind-support.ts'
import type { ServiceContext } from '../feature/define.ts'
import { createSecretBox, previousKeys, secretAad } from '../kernel/crypto.ts'
import { conflict, invalid, notFound } from '../kernel/errors.ts'
import {
  openWebhookBucket,
  publishWebhook,
  unpublishWebhook,
  webhookStore,
  type ManagedWebhookRow,
  type WebhookFields,
} from './store.ts'

/*
 * Webhooks as a config kind (section `webhooks`, key: the path, unique across the installation):
 * the body is the create endpoint's (`function_namespace` / `function_name` name the function, so
 * a file is portable). The signing secret is a secret field: never exported; in a body, a string
 * sets it, null removes it, and leaving it out keeps the stored one (an exported file applied
 * again does not strip the secrets it could not carry). A webhook config creates is owned by the
 * principal applying it (an anonymous webhook runs as its owner); an update keeps the owner.
 * The WEBHOOKS bucket the gateways watch is written after the commit.
 */
const SECRET = 'signing_secret'

const text = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback)

/** The body with the API's defaults filled: what a webhook written from it stores. */
export function webhookFields(body: Readonly<Record<string, unknown>>): WebhookFields {
  const dv = body['default_values']
  return {
    path: text(body['path'], ''),
    http_method: text(body['http_method'], 'POST'),
    function_namespace: text(body['function_namespace'], 'default'),
    function_name: text(body['function_name'], ''),
    requires_auth: typeof body['requires_auth'] === 'boolean' ? body['requires_auth'] : true,
    default_values: typeof dv === 'object' && dv !== null && !Array.isArray(dv) ? (dv as Record<string, unknown>) : {},
    description: text(body['description'], ''),
    is_active: typeof body['is_active'] === 'boolean' ? body['is_active'] : true,
  }
}

const checksumOf = (body: Readonly<Record<string, unknown>>): string => {
  const secret = body[SECRET]
  return bodyChecksum({ ...webhookFields(body), ...(secret === undefined ? {} : { [SECRET]: secret }) })
}

const currentOf = (r: ManagedWebhookRow): ConfigCurrent => {
  const body: Record<string, unknown> = { ...webhookFields(r) }
  return { key: r.path, body, managedBy: r.managed_by, checksum: r.checksum ?? checksumOf(body) }
}

export function webhookConfigKind(ctx: ServiceContext): ConfigKind {
  const box = createSecretBox(ctx.config.ENCRYPTION_KEY, previousKeys(ctx.config.ENCRYPTION_KEY_PREVIOUS))
  // opened at the first write (a feature's configKinds are built synchronously)
  let bucket: Promise<KV> | undefined
  const kv = () => (bucket ??= openWebhookBucket(ctx.nc, ctx.names))
  const seal = (id: string, v: unknown): string | null | undefined =>
    v === undefined ? undefined : v === null ? null : box.encrypt(String(v), secretAad('webhook', id, SECRET))

  return {
    kind: 'webhook',
    section: 'webhooks',
    packageable: true,
    secretFields: [SECRET],
    keyOf: (body) => text(body['path'], ''),
    refs: (body) => {
      const f = webhookFields(body)
      return [{ kind: 'function', key: `${f.function_namespace}/${f.function_name}` }]
    },
    checksum: checksumOf,
    // the path rules and the secret's length are the create body's; the function is a reference
    validate: async (_p, body) => bodyIssues(WebhookCreateBody, body),
    list: async (db) => (await webhookStore(db).allManaged()).map(currentOf),
    async write(tx, p, body, { managedBy }): Promise<AfterCommit[]> {
      const issues = bodyIssues(WebhookCreateBody, body)
      if (issues.length > 0) throw invalid(`invalid webhook ${text(body['path'], '')}`, issues)
      const store = webhookStore(tx)
      const f = webhookFields(body)
      const managed = { by: managedBy, checksum: checksumOf(body) }
      const row = await store.byPath(f.path)
      let next
      if (row === null) {
        const id = randomUUID()
        next = await store.create(id, p.userId, f, seal(id, body[SECRET]) ?? null, managed)
        if (next === null) throw conflict(`a webhook already uses the path ${f.path}`, 'webhook.exists')
      } else {
        next = await store.update(row.id, f, seal(row.id, body[SECRET]), managed)
        if (next === null) throw notFound(`no webhook at ${f.path}`, 'webhook.not_found')
      }
      const written = next
      return [async () => publishWebhook(await kv(), written)]
    },
    async remove(tx, _p, key): Promise<AfterCommit[]> {
      const store = webhookStore(tx)
      const row = await store.byPath(key)
      if (row === null) return []
      await store.delete(row.id)
      return [async () => unpublishWebhook(await kv(), key)]
    },
  }
}
