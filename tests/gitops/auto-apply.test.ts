import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { ENCRYPTION_KEY, SECRET_KEY, startTestPlatform } from '../helpers/env.ts'
import { root } from '../platform/single-node.ts'
import { readServices } from '../setup/services.ts'

/*
 * AUTO_APPLY_CONFIG: CONFIG_FILE applied at the resource role's start (src/gitops/auto-apply.ts).
 * A good file is there once the platform answers; a bad one stops the process, and its output
 * names the file, line and column.
 */
const dir = mkdtempSync(join(tmpdir(), 'config-file-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const GOOD = `apiVersion: platform/v1
kind: PlatformConfig
metadata:
  name: start
spec:
  skills:
    - namespace: boot
      name: style
      content: \${AUTO_APPLY_TEST_CONTENT}
  agents:
    - namespace: boot
      name: helper
      system_prompt: You help.
      enabled_skills: [boot/style]
`

t.test('a good file is applied at start, managed by config', async (t) => {
  const file = join(dir, 'good.yaml')
  writeFileSync(file, GOOD)
  process.env['AUTO_APPLY_TEST_CONTENT'] = 'Write short sentences.'
  const env = await startTestPlatform(t, { AUTO_APPLY_CONFIG: 'true', CONFIG_FILE: file })
  const skill = await env.request('GET', '/api/v1/skills/boot/style')
  t.equal(skill.status, 200, skill.text)
  t.match(skill.body, { content: 'Write short sentences.', managed_by: 'config' })
  t.match((await env.request('GET', '/api/v1/agents/boot/helper')).body, { managed_by: 'config' })
})

t.test('a bad file stops the start with file:line:column', async (t) => {
  const file = join(dir, 'bad.yaml')
  writeFileSync(file, GOOD.replace('enabled_skills: [boot/style]', 'enabled_skills: [boot/missing]'))
  const services = readServices()
  const db = `autoapply_${String(process.pid)}`
  const admin = new pg.Client({ connectionString: `${services.pgBase}/postgres` })
  await admin.connect()
  await admin.query(`create database ${db} template ${services.template}`)
  t.teardown(async () => {
    await admin.query(`drop database if exists ${db} with (force)`)
    await admin.end()
  })
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-autoapply-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'start'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      NATS_URL: services.natsUrl,
      NATS_PREFIX: db,
      DATABASE_URL: `${services.pgBase}/${db}`,
      SECRET_KEY,
      ENCRYPTION_KEY,
      DATABASE_PASSWORD: 'unused',
      SUPERADMIN_EMAIL: 'admin@test.local',
      SANDBOX_MIN_SIZE: '1',
      SANDBOX_MIN_IDLE: '1',
      AUTO_APPLY_CONFIG: 'true',
      CONFIG_FILE: file,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolve(null)
    }, 90_000)
    child.once('exit', (c) => {
      clearTimeout(timer)
      resolve(c)
    })
  })
  t.not(code, 0, `the process stopped with an error:\n${out}`)
  t.not(code, null, 'it stopped by itself')
  t.match(out, `${file}:14:24`, 'file, line and column of the dangling reference')
  t.match(out, /boot\/missing/)
})
