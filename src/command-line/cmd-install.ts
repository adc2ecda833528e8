import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { optionFlag, optionText, type ParsedArgs } from './args.ts'
import type { Io } from './io.ts'

/*
 * `platform install --domain <d>`: the files that run the platform on one server under systemd
 * behind Caddy. One service running every role (single-node mode: the platform starts its own
 * nats-server and Postgres in its data directory), or with `--split` one service per role plus a
 * target that groups them (NATS and Postgres then elsewhere: --nats-url, --database-url). Caddy
 * terminates TLS for the domain with a certificate it obtains itself (automatic HTTPS) and proxies
 * to the gateway on 127.0.0.1. It writes files and nothing else: enabling and starting the
 * services is printed as the next step, for the operator to run.
 */

export interface InstallOptions {
  domain: string
  /** The root the files are written under (`/`: the real /etc). */
  root: string
  /** The platform's checkout (WorkingDirectory of the services). */
  appDir: string
  /** The node binary the services run. */
  node: string
  email: string
  port: number
  user: string
  split: boolean
  natsUrl: string
  databaseUrl: string
}

export interface InstallFile {
  /** Absolute path on the target system (without the root). */
  path: string
  mode: number
  text: string
  /** Kept as it is when it already exists (it holds generated keys that data depends on). */
  keep?: boolean
  /** Printed with its values masked (it holds secrets). */
  secret?: boolean
}

export const ROLES = ['gateway', 'resources', 'workers', 'actors'] as const
export const ENV_FILE = '/etc/agent-platform/platform.env'
export const DATA_DIR = '/var/lib/agent-platform'
export const CADDYFILE = '/etc/caddy/Caddyfile'
const UNIT_DIR = '/etc/systemd/system'

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$/i

const key = () => randomBytes(32).toString('base64url')

/** The environment file: settings every service reads, with the keys generated once. */
function envFile(o: InstallOptions): InstallFile {
  const lines = [
    "# The agent platform's settings (docs/configuration.md), read by its systemd services.",
    '# Written once by `platform install`; a later install keeps this file: the keys below encrypt',
    '# stored secrets and sign tokens, so changing them makes existing data unreadable.',
    'NODE_ENV=production',
    `DOMAIN=${o.domain}`,
    `SUPERADMIN_EMAIL=${o.email}`,
    `SECRET_KEY=${key()}`,
    `ENCRYPTION_KEY=${key()}`,
    `DATABASE_PASSWORD=${key()}`,
    '# the gateway listens on loopback only: Caddy is the way in, and its X-Forwarded-For is believed',
    'HOST=127.0.0.1',
    `PORT=${String(o.port)}`,
    'TRUSTED_PROXIES=127.0.0.1',
    `DATA_DIR=${DATA_DIR}`,
  ]
  if (o.split) lines.push(`NATS_URL=${o.natsUrl}`, `DATABASE_URL=${o.databaseUrl}`)
  return { path: ENV_FILE, mode: 0o600, text: `${lines.join('\n')}\n`, keep: true, secret: true }
}

function serviceUnit(o: InstallOptions, role: string | undefined): string {
  const what = role === undefined ? 'every role, single node' : `the ${role} role`
  const lines = [
    '# Written by `platform install` (docs/operations.md#deploying).',
    '[Unit]',
    `Description=Agent platform (${what})`,
    `Documentation=file://${o.appDir}/docs/operations.md`,
    'After=network-online.target',
    'Wants=network-online.target',
  ]
  if (role !== undefined) lines.push('PartOf=agent-platform.target')
  lines.push(
    '',
    '[Service]',
    'Type=simple',
    `User=${o.user}`,
    `WorkingDirectory=${o.appDir}`,
    `EnvironmentFile=${ENV_FILE}`,
  )
  if (role !== undefined) lines.push(`Environment=ROLES=${role}`)
  lines.push(
    // what `npm start` runs, without npm: tsx runs the TypeScript, node receives the signals
    `ExecStart=${o.node} --import tsx src/cli.ts start`,
    // SIGTERM to node alone: it stops within its own budget, then stops the child servers it started
    'KillMode=mixed',
    'KillSignal=SIGTERM',
    'TimeoutStopSec=30',
    'Restart=on-failure',
    'RestartSec=5',
    'StateDirectory=agent-platform',
    'LimitNOFILE=65536',
    'NoNewPrivileges=yes',
    'ProtectSystem=full',
    'PrivateTmp=yes',
    '',
    '[Install]',
    role === undefined ? 'WantedBy=multi-user.target' : 'WantedBy=agent-platform.target',
  )
  return `${lines.join('\n')}\n`
}

function targetUnit(): string {
  return [
    '# Written by `platform install --split`: starts and stops every role together.',
    '[Unit]',
    'Description=Agent platform (every role)',
    `Wants=${ROLES.map((r) => `agent-platform-${r}.service`).join(' ')}`,
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n')
}

/** The Caddy site: automatic HTTPS for the domain, everything but /metrics proxied to the gateway. */
function caddyfile(o: InstallOptions): string {
  return [
    '# Written by `platform install` (docs/operations.md#deploying). Caddy obtains and renews the',
    `# certificate of ${o.domain} by itself (ports 80 and 443 must reach this server).`,
    '{',
    `\temail ${o.email}`,
    '}',
    '',
    `${o.domain} {`,
    '\t# Prometheus metrics stay on this machine: scrape 127.0.0.1 (docs/operations.md#metrics)',
    '\trespond /metrics 404',
    `\treverse_proxy 127.0.0.1:${String(o.port)} {`,
    '\t\t# Server-Sent Events (chat streams, events tail): every event at once, no buffering',
    '\t\tflush_interval -1',
    '\t}',
    '}',
    '',
  ].join('\n')
}

/** Every file of an installation, by its path on the target system. */
export function installFiles(o: InstallOptions): InstallFile[] {
  const files = [envFile(o)]
  if (o.split) {
    for (const role of ROLES)
      files.push({ path: `${UNIT_DIR}/agent-platform-${role}.service`, mode: 0o644, text: serviceUnit(o, role) })
    files.push({ path: `${UNIT_DIR}/agent-platform.target`, mode: 0o644, text: targetUnit() })
  } else files.push({ path: `${UNIT_DIR}/agent-platform.service`, mode: 0o644, text: serviceUnit(o, undefined) })
  files.push({ path: CADDYFILE, mode: 0o644, text: caddyfile(o) })
  return files
}

function optionsOf(a: ParsedArgs): InstallOptions {
  const domain = (optionText(a, 'domain') ?? '').toLowerCase()
  if (!DOMAIN.test(domain))
    throw new Error(
      `--domain ${domain === '' ? '(missing)' : domain}: give the public domain name, e.g. platform.example.com`,
    )
  const port = Number(optionText(a, 'port') ?? '8000')
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error('--port: a TCP port number')
  const split = optionFlag(a, 'split')
  const natsUrl = optionText(a, 'nats-url') ?? ''
  const databaseUrl = optionText(a, 'database-url') ?? ''
  if (split && (natsUrl === '' || databaseUrl === ''))
    throw new Error(
      '--split runs each role as its own service, so they share a NATS and a Postgres: give --nats-url and --database-url',
    )
  if (!split && (natsUrl !== '' || databaseUrl !== ''))
    throw new Error('--nats-url and --database-url go with --split (single-node mode starts its own NATS and Postgres)')
  return {
    domain,
    root: resolve(optionText(a, 'dir') ?? '/'),
    appDir: resolve(optionText(a, 'app-dir') ?? join(import.meta.dirname, '..', '..')),
    node: process.execPath,
    email: optionText(a, 'email') ?? `admin@${domain}`,
    port,
    user: optionText(a, 'user') ?? 'root',
    split,
    natsUrl,
    databaseUrl,
  }
}

const masked = (text: string) => text.replace(/^([A-Z_]*(?:KEY|PASSWORD|URL))=.*$/gm, '$1=***')

export async function install(a: ParsedArgs, io: Io): Promise<number> {
  const o = optionsOf(a)
  const dryRun = optionFlag(a, 'dry-run')
  if (!existsSync(join(o.appDir, 'src', 'cli.ts')))
    throw new Error(`--app-dir ${o.appDir} holds no platform checkout (src/cli.ts)`)
  for (const f of installFiles(o)) {
    const target = join(o.root, f.path)
    const kept = f.keep === true && existsSync(target)
    if (dryRun) {
      io.out(`# ${target} (mode ${f.mode.toString(8)})${kept ? ': exists, would be kept' : ''}\n`)
      io.out(`${f.secret === true ? masked(f.text) : f.text}\n`)
      continue
    }
    if (kept) {
      io.err(`kept    ${target} (it exists; its keys stay)\n`)
      continue
    }
    mkdirSync(dirname(target), { recursive: true, mode: f.secret === true ? 0o700 : 0o755 })
    if (f.path === CADDYFILE && existsSync(target) && readFileSync(target, 'utf8') !== f.text)
      writeFileSync(`${target}.before-agent-platform`, readFileSync(target))
    writeFileSync(target, f.text, { mode: f.mode })
    chmodSync(target, f.mode)
    io.err(`wrote   ${target}\n`)
  }
  const unit = o.split ? 'agent-platform.target' : 'agent-platform.service'
  io.err(
    [
      '',
      dryRun ? 'Nothing was written (--dry-run). Then:' : 'Next, as root:',
      `  apt-get install -y caddy bubblewrap python3${o.split ? '' : ' nats-server postgresql'}`,
      `  (cd ${o.appDir} && npm ci --omit=dev)   # when node_modules is missing`,
      `  systemctl daemon-reload && systemctl enable --now ${unit}`,
      '  systemctl reload caddy',
      `  curl -s https://${o.domain}/health`,
      '',
    ].join('\n'),
  )
  return 0
}
