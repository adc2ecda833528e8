import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { createSecretBox } from '../../src/kernel/crypto.ts'
import { createLogger } from '../../src/kernel/log.ts'
import { createResourceService } from '../../src/resources/service.ts'
import { secretKind } from '../../src/kinds/secret/kind.ts'
import { KINDS } from '../../src/features.ts'
import { ENCRYPTION_KEY, SECRET_KEY, startTestPlatform } from '../helpers/env.ts'

/*
 * Secrets at rest: encrypted in the row, bound to it (AAD), never in responses, and a key rotation
 * with ENCRYPTION_KEY_PREVIOUS plus `npm run cli -- reencrypt-secrets`.
 */
const run = promisify(execFile)
const NEW_KEY = 'rotated-encryption-key-rotated-encryption-key-02'
const env = await startTestPlatform(t)
const user = await env.createUser('secret-owner@test.local')
const other = await env.createUser('secret-other@test.local')
const PLAIN = 'hunter2-very-secret'
const db = env.platform.db
if (db === undefined) throw new Error('no db')
const service = (current: string, previous: string[] = []) =>
  createResourceService({
    db,
    log: createLogger({ level: 'silent' }),
    kinds: KINDS,
    box: createSecretBox(current, previous),
  })

async function makeSecret(name: string): Promise<string> {
  const res = await env.request('POST', '/api/v1/secrets', {
    token: user.token,
    body: { namespace: 'vault', name, value: PLAIN },
  })
  t.equal(res.status, 201)
  return (res.body as { id: string }).id
}

t.test('a secret is owned by its creator, encrypted in the row and never returned', async (t) => {
  const id = await makeSecret('stripe')
  const got = await env.request('GET', '/api/v1/secrets/vault/stripe', { token: user.token })
  t.equal(got.status, 200)
  t.equal((got.body as { has_value: boolean }).has_value, true)
  t.notOk(got.text.includes(PLAIN), 'value not in the response')
  t.equal(
    (await env.request('GET', '/api/v1/secrets/vault/stripe', { token: other.token })).status,
    404,
    'another user does not see it',
  )
  const [row] = await env.sql<{ spec: unknown; secrets: Record<string, string> }>(
    'select spec, secrets from resources where id = $1',
    [id],
  )
  t.notOk(JSON.stringify(row).includes(PLAIN), 'the raw row holds no plaintext')
  t.match(row?.secrets['value'], /^v1:[0-9a-f]{8}:/)
  t.same(await service(ENCRYPTION_KEY).secretsOf(secretKind, id), { value: PLAIN })
})

t.test('a ciphertext copied to another row does not decrypt (row identity is the AAD)', async (t) => {
  const source = await makeSecret('copy-from')
  const target = await makeSecret('copy-to')
  await env.sql('update resources set secrets = (select secrets from resources where id = $1) where id = $2', [
    source,
    target,
  ])
  await t.rejects(service(ENCRYPTION_KEY).secretsOf(secretKind, target), { code: 'secrets.undecryptable' })
  t.same(await service(ENCRYPTION_KEY).secretsOf(secretKind, source), { value: PLAIN })
  await env.sql('delete from resources where id = $1', [target])
})

t.test(
  'rotation: the previous key still decrypts; reencrypt-secrets rewrites everything with the new key',
  async (t) => {
    const id = await makeSecret('rotate-me')
    await t.rejects(service(NEW_KEY).secretsOf(secretKind, id), 'the new key alone cannot read old ciphertexts')
    t.same(
      await service(NEW_KEY, [ENCRYPTION_KEY]).secretsOf(secretKind, id),
      { value: PLAIN },
      'ENCRYPTION_KEY_PREVIOUS decrypts',
    )
    const cli = await run(process.execPath, ['--import=tsx', 'src/cli.ts', 'reencrypt-secrets'], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DATABASE_URL: env.databaseUrl,
        SECRET_KEY,
        ENCRYPTION_KEY: NEW_KEY,
        ENCRYPTION_KEY_PREVIOUS: ENCRYPTION_KEY,
        DATABASE_PASSWORD: 'unused',
        SUPERADMIN_EMAIL: 'admin@test.local',
      },
    })
    const count = /re-encrypted: (\d+)/.exec(cli.stdout)
    t.ok(Number(count?.[1]) >= 2, `reports what it rewrote: ${cli.stdout.trim()}`)
    t.same(await service(NEW_KEY).secretsOf(secretKind, id), { value: PLAIN }, 'the new key alone now reads it')
    await t.rejects(service(ENCRYPTION_KEY).secretsOf(secretKind, id), 'the old key no longer does')
    const again = await run(process.execPath, ['--import=tsx', 'src/cli.ts', 'reencrypt-secrets'], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DATABASE_URL: env.databaseUrl,
        SECRET_KEY,
        ENCRYPTION_KEY: NEW_KEY,
        DATABASE_PASSWORD: 'unused',
        SUPERADMIN_EMAIL: 'admin@test.local',
      },
    })
    t.match(again.stdout, /re-encrypted: 0/, 'a second run has nothing to do')
  },
)
