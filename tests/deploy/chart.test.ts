import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parseAllDocuments, parse as parseYaml } from 'yaml'
import { goToolNamed } from '../helpers/go-tool.ts'
import { kubernetesSchemas } from './k8s-schemas.ts'

/*
 * The Helm chart (deploy/helm/agent-platform) with its three value sets (deploy/helm/values/):
 * `helm lint --strict`, `helm template`, kubeconform on what it renders (against schemas made from
 * @kubernetes/client-node's models: ./k8s-schemas.ts), and the facts that matter read from the
 * rendered manifests. helm and kubeconform are built from their Go modules (tests/helpers/go-tool.ts);
 * without Go this file is skipped with the reason.
 *
 * The NATS chart the production sets install (a dependency in Chart.yaml) cannot be fetched here:
 * its repository is not reachable. Helm refuses to render a chart whose declared dependency is
 * missing from charts/, whatever its condition, so each render runs on a copy of the chart with an
 * empty stand-in named `nats` in charts/ (same name and version, no templates). So the platform's
 * own manifests are rendered and checked for every value set, and the official NATS chart's
 * manifests (its StatefulSet, its Services) are not rendered here.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const CHART = join(ROOT, 'deploy', 'helm', 'agent-platform')
const VALUES = join(ROOT, 'deploy', 'helm', 'values')
const SETS = ['single', 'production', 'external-nats'] as const
/** The platform's roles: each a Deployment with NATS, the database and the secrets. */
const ROLES = ['gateway', 'resources', 'workers', 'actors'] as const
const RELEASE = 'platform'
const NAMESPACE = 'platform'

t.setTimeout(1_800_000)

type Tools = { helm: string; kubeconform: string } | { skip: string } | { error: Error }
const tools = await (async (): Promise<Tools> => {
  try {
    const helm = await goToolNamed('helm')
    if (helm.skip !== false) return { skip: helm.skip }
    const kubeconform = await goToolNamed('kubeconform')
    if (kubeconform.skip !== false) return { skip: kubeconform.skip }
    return { helm: helm.path, kubeconform: kubeconform.path }
  } catch (err) {
    return { error: err as Error }
  }
})()

if ('error' in tools) {
  t.fail(tools.error.message)
} else if ('skip' in tools) {
  t.test('the chart', { skip: tools.skip }, async () => {})
} else {
  const { helm, kubeconform } = tools
  // helm keeps no state of its own between runs here: its cache, config and data in a temp dir
  const helmHome = mkdtempSync(join(tmpdir(), 'helm-home-'))
  t.teardown(() => rmSync(helmHome, { recursive: true, force: true }))
  const helmEnv = {
    ...process.env,
    HELM_CACHE_HOME: join(helmHome, 'cache'),
    HELM_CONFIG_HOME: join(helmHome, 'config'),
    HELM_DATA_HOME: join(helmHome, 'data'),
  }
  const run = (cmd: string, args: string[], input?: string) =>
    spawnSync(cmd, args, { encoding: 'utf8', env: helmEnv, input, maxBuffer: 64 * 1024 * 1024 })

  /** A copy of the chart with the empty stand-in for the NATS dependency (see the note above). */
  const chart = join(helmHome, 'agent-platform')
  cpSync(CHART, chart, { recursive: true })
  const dependency = (
    parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as {
      dependencies: { name: string; version: string; condition: string }[]
    }
  ).dependencies.find((d) => d.name === 'nats')
  mkdirSync(join(chart, 'charts', 'nats'), { recursive: true })
  writeFileSync(
    join(chart, 'charts', 'nats', 'Chart.yaml'),
    `apiVersion: v2\nname: nats\nversion: ${dependency?.version ?? '0.0.0'}\ndescription: an empty stand-in for the NATS chart (its repository is not reachable from the test machine)\n`,
  )

  t.test('Chart.yaml declares the official NATS chart, switched by nats.enabled', async (t) => {
    t.ok(dependency, 'a nats dependency')
    t.equal(dependency?.condition, 'nats.enabled')
    const appVersion = (parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string }).appVersion
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
    t.equal(appVersion, version, "appVersion (the default image tag) is the platform's version")
    t.match(
      readFileSync(join(CHART, 'Chart.yaml'), 'utf8'),
      /repository: https:\/\/nats-io\.github\.io\/k8s\/helm\/charts\//,
    )
  })

  const schemas = kubernetesSchemas()

  interface Manifest {
    apiVersion: string
    kind: string
    metadata: { name: string; namespace?: string; labels?: Record<string, string> }
    spec?: Record<string, unknown>
    [key: string]: unknown
  }

  const rendered = new Map<string, Manifest[]>()

  /** `helm template` of a value set with `--set` overrides: its manifests (t.fail on an error). */
  const renderWith = (t: Test, set: string, overrides: string[]): Manifest[] => {
    const args = ['template', RELEASE, chart, '--namespace', NAMESPACE, '-f', join(VALUES, `${set}.yaml`)]
    for (const o of overrides) args.push('--set', o)
    const out = run(helm, args)
    t.equal(out.status, 0, `helm template ${overrides.join(' ')} ${out.stderr}`)
    return parseAllDocuments(out.stdout)
      .map((d) => d.toJS() as Manifest | null)
      .filter((d): d is Manifest => d !== null)
  }

  for (const set of SETS) {
    t.test(`values/${set}.yaml: helm lint --strict, helm template, kubeconform`, async (t) => {
      const values = join(VALUES, `${set}.yaml`)
      const lint = run(helm, ['lint', '--strict', chart, '-f', values])
      t.equal(lint.status, 0, `helm lint --strict\n${lint.stdout}${lint.stderr}`)
      const out = run(helm, ['template', RELEASE, chart, '--namespace', NAMESPACE, '-f', values])
      t.equal(out.status, 0, `helm template ${out.stderr}`)
      const docs = parseAllDocuments(out.stdout)
        .map((d) => d.toJS() as Manifest | null)
        .filter((d): d is Manifest => d !== null)
      t.ok(docs.length > 5, `${docs.length} manifests`)
      rendered.set(set, docs)
      const kc = run(
        kubeconform,
        ['-strict', '-summary', '-output', 'json', '-schema-location', schemas.location, '-'],
        out.stdout,
      )
      const report = JSON.parse(kc.stdout) as {
        resources?: { filename: string; kind: string; name: string; status: string; msg: string }[]
        summary: { valid: number; invalid: number; errors: number; skipped: number }
      }
      const bad = (report.resources ?? []).filter((r) => r.status !== 'statusValid')
      t.same(bad, [], `kubeconform (Kubernetes ${schemas.kubernetes} schemas): nothing invalid`)
      t.equal(kc.status, 0, 'kubeconform exits 0')
      t.equal(report.summary.valid, docs.length, `every manifest valid (${report.summary.valid})`)
      t.equal(report.summary.skipped, 0, 'none skipped for want of a schema')
    })
  }

  const byKind = (set: string, kind: string) => (rendered.get(set) ?? []).filter((m) => m.kind === kind)
  type Container = {
    env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[]
    readinessProbe?: { httpGet?: { path: string; port: string } }
    livenessProbe?: { httpGet?: { path: string; port: string } }
    securityContext?: Record<string, unknown>
  }
  type PodSpec = {
    containers: Container[]
    automountServiceAccountToken?: boolean
    securityContext?: Record<string, unknown>
  }
  const podOf = (d: Manifest) => (d.spec as { template: { spec: PodSpec } }).template.spec
  const envOf = (d: Manifest) => {
    const map = new Map<string, string>()
    for (const e of podOf(d).containers[0]?.env ?? [])
      map.set(
        e.name,
        e.value ?? `secret:${e.valueFrom?.secretKeyRef?.name ?? '?'}/${e.valueFrom?.secretKeyRef?.key ?? '?'}`,
      )
    return map
  }

  const gatewayService = `${RELEASE}-agent-platform-gateway`
  const consoleName = `${RELEASE}-agent-platform-console`
  const consoleLabels = {
    'app.kubernetes.io/name': 'agent-platform',
    'app.kubernetes.io/instance': RELEASE,
    'app.kubernetes.io/component': 'console',
  }
  const gatewayLabels = { ...consoleLabels, 'app.kubernetes.io/component': 'gateway' }
  type Peer = { podSelector?: { matchLabels?: Record<string, string> }; namespaceSelector?: unknown }
  type PolicySpec = {
    podSelector: { matchLabels: Record<string, string>; matchExpressions?: unknown[] }
    policyTypes: string[]
    ingress?: { ports?: { port: number | string; protocol: string }[]; from?: Peer[] }[]
    egress?: { ports?: { port: number | string; protocol: string }[]; to?: Peer[] }[]
  }

  /** The console of a value set (roles.console on): its Deployment, Service, Ingress and NetworkPolicy. */
  function checkConsole(t: Test, set: string, docs: Manifest[]) {
    const named = (kind: string, name: string) => docs.find((m) => m.kind === kind && m.metadata.name === name)
    const deployment = named('Deployment', consoleName)
    if (deployment === undefined) return void t.fail('a console Deployment')
    const pod = podOf(deployment)
    const c = pod.containers[0] as Container & { ports?: { name: string; containerPort: number }[] }
    const env = envOf(deployment)
    t.equal(env.get('ROLES'), 'console', 'console: ROLES=console alone (no probe gateway: it serves HTTP itself)')
    t.equal(env.get('CONSOLE_PORT'), '51245')
    t.equal(
      env.get('CONSOLE_API_URL'),
      `http://${gatewayService}.${NAMESPACE}.svc:80`,
      "console: CONSOLE_API_URL is the gateways' Service, in-cluster",
    )
    t.equal(env.get('NODE_ENV'), 'production')
    t.equal(env.get('DOMAIN'), 'platform.example.com', "DOMAIN: the API's origin its CSP lets frame a preview")
    t.equal(
      env.get('TRUSTED_PROXIES'),
      set === 'production' ? '10.0.0.0/8' : undefined,
      'console: TRUSTED_PROXIES from console.trustedProxies (production: the pod network; otherwise none)',
    )
    t.same(
      [...env.keys()].filter((n) =>
        /^(NATS_|DATABASE_|SECRET_KEY|ENCRYPTION_KEY|SUPERADMIN|SMTP_|ANALYTICS_|K8S_|SANDBOX_)/.test(n),
      ),
      [],
      'console: no NATS, database, secret, mail, analytics or sandbox setting',
    )
    t.notOk(
      (c.env ?? []).some((e) => e.valueFrom !== undefined),
      'console: nothing from a Secret',
    )
    t.same(
      c.ports?.map((p) => [p.name, p.containerPort]),
      [['http', 51245]],
      'console: its port, named http',
    )
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe'] as const)
      t.same(
        (c as Record<string, unknown>)[probe],
        { ...((c as Record<string, unknown>)[probe] as object), httpGet: { path: '/', port: 'http' } },
        `console: ${probe} GET / (its page, served without a session)`,
      )
    t.equal(pod.securityContext?.['runAsNonRoot'], true, 'console: non-root')
    t.equal(c.securityContext?.['readOnlyRootFilesystem'], true, 'console: read-only root filesystem')
    t.same(c.securityContext?.['capabilities'], { drop: ['ALL'] }, 'console: no capabilities')
    t.equal(pod.automountServiceAccountToken, false, 'console: no API token')

    const service = named('Service', consoleName)
    const svc = service?.spec as { selector: Record<string, string>; ports: { port: number; targetPort: string }[] }
    t.same(svc?.selector, consoleLabels, "console Service: selects the console's pods")
    t.same(
      svc?.ports.map((p) => [p.port, p.targetPort]),
      [[80, 'http']],
      'console Service: port 80 to http',
    )

    const ingress = named('Ingress', consoleName)
    const ing = ingress?.spec as {
      tls?: { hosts: string[]; secretName: string }[]
      rules: {
        host: string
        http: { paths: { path: string; backend: { service: { name: string; port: { name: string } } } }[] }
      }[]
    }
    const host = set === 'external-nats' ? 'admin.platform.example.com' : 'console.platform.example.com'
    t.equal(ing?.rules.length, 1, 'console Ingress: one host')
    t.equal(ing?.rules[0]?.host, host, `console Ingress: ${host}`)
    t.same(
      ing?.rules[0]?.http.paths.map((p) => [p.path, p.backend.service.name, p.backend.service.port.name]),
      [['/', consoleName, 'http']],
      "console Ingress: / to the console's Service",
    )
    t.same(ing?.tls?.[0]?.hosts, [host], 'console Ingress: TLS for its host')
    const api = named('Ingress', `${RELEASE}-agent-platform`)
    t.notOk(
      (api?.spec as typeof ing | undefined)?.rules.some((r) => r.host === host),
      "the API's Ingress does not serve the console's host",
    )
    const annotations = ingress?.metadata as { annotations?: Record<string, string> }
    t.equal(
      annotations.annotations?.['nginx.ingress.kubernetes.io/proxy-buffering'],
      'off',
      "console Ingress: the shared annotations (SSE unbuffered: it proxies the API's streams)",
    )

    const policy = named('NetworkPolicy', consoleName)?.spec as PolicySpec | undefined
    if (policy === undefined) return void t.fail('a console NetworkPolicy')
    t.same(policy.podSelector.matchLabels, consoleLabels, "console policy: the console's pods")
    t.same(policy.policyTypes.sort(), ['Egress', 'Ingress'])
    t.same(policy.ingress?.[0]?.ports, [{ port: 'http', protocol: 'TCP' }], 'console policy: in, its port only')
    t.same(
      policy.egress,
      [
        {
          ports: [
            { port: 53, protocol: 'UDP' },
            { port: 53, protocol: 'TCP' },
          ],
        },
        { to: [{ podSelector: { matchLabels: gatewayLabels } }], ports: [{ port: 8000, protocol: 'TCP' }] },
      ],
      "console policy: out, DNS and the gateways' port only (no NATS, no Postgres)",
    )
    const nats = named('NetworkPolicy', `${RELEASE}-agent-platform-nats`)?.spec as PolicySpec | undefined
    if (nats !== undefined)
      t.match(
        nats.ingress?.[0]?.from?.[0],
        {
          podSelector: {
            matchExpressions: [{ key: 'app.kubernetes.io/component', operator: 'NotIn', values: ['console'] }],
          },
        },
        "the chart's NATS takes no client from the console's pods",
      )
    const gateway = named('NetworkPolicy', `${RELEASE}-agent-platform-gateway`)?.spec as PolicySpec | undefined
    const from = gateway?.ingress?.[0]?.from
    if (from !== undefined)
      t.ok(
        from.some((p) => JSON.stringify(p.podSelector?.matchLabels) === JSON.stringify(consoleLabels)),
        'gatewayFrom set: the console pods may still reach the gateways',
      )
  }

  for (const set of SETS) {
    t.test(`values/${set}.yaml: what the manifests say`, async (t) => {
      const docs = rendered.get(set)
      if (docs === undefined) return t.fail('not rendered')
      const component = (m: Manifest) => m.metadata.labels?.['app.kubernetes.io/component']
      t.same(
        byKind(set, 'Deployment').map(component).sort(),
        [...ROLES, 'console'].sort(),
        'a Deployment per role, and the console',
      )
      const deployments = byKind(set, 'Deployment').filter((d) => component(d) !== 'console')
      for (const d of deployments) {
        const role = d.metadata.labels?.['app.kubernetes.io/component'] as string
        const env = envOf(d)
        t.equal(
          env.get('ROLES'),
          role === 'gateway' ? 'gateway' : `${role},gateway`,
          `${role}: ROLES (with the probe gateway)`,
        )
        const c = podOf(d).containers[0] as Container
        t.equal(c.readinessProbe?.httpGet?.path, '/health', `${role}: readiness on /health`)
        t.ok(c.livenessProbe?.httpGet?.port, `${role}: a liveness probe over HTTP`)
        t.equal(env.get('NODE_ENV'), 'production')
        for (const secret of ['SECRET_KEY', 'ENCRYPTION_KEY', 'DATABASE_URL', 'DATABASE_PASSWORD'])
          t.match(env.get(secret), /^secret:/, `${role}: ${secret} from a Secret`)
        t.match(env.get('NATS_URL'), /^nats:\/\//, `${role}: NATS_URL`)
        t.equal(podOf(d).securityContext?.['runAsNonRoot'], true, `${role}: non-root`)
        t.equal(c.securityContext?.['readOnlyRootFilesystem'], true, `${role}: read-only root filesystem`)
        t.equal(
          podOf(d).automountServiceAccountToken,
          role === 'workers',
          `${role}: an API token only for the workers (sandbox pods)`,
        )
        t.equal(env.get('SANDBOX_EXECUTOR'), 'k8s_pod')
        t.equal(env.get('K8S_RELEASE_NAME'), RELEASE, 'sandbox pods carry the release label the policy selects')
      }

      // secrets by reference only: no Secret rendered, no literal value that looks like one
      t.same(byKind(set, 'Secret'), [], 'no Secret object rendered')
      for (const d of deployments)
        for (const e of podOf(d).containers[0]?.env ?? [])
          if (/KEY|PASSWORD|TOKEN|DATABASE_URL/.test(e.name) && !/^K8S_|_FILE$/.test(e.name))
            t.ok(e.valueFrom?.secretKeyRef, `${e.name} by secretKeyRef`)

      // the sandbox NetworkPolicy: no ingress, egress DNS + internet without private ranges
      const sandboxPolicy = byKind(set, 'NetworkPolicy').find((p) => p.metadata.name.endsWith('-sandbox'))
      t.ok(sandboxPolicy, 'a NetworkPolicy for the sandbox pods')
      const spec = sandboxPolicy?.spec as {
        podSelector: { matchLabels: Record<string, string> }
        policyTypes: string[]
        ingress: unknown[]
        egress: {
          ports?: { port: number; protocol: string }[]
          to?: { ipBlock: { cidr: string; except: string[] } }[]
        }[]
      }
      t.same(spec.podSelector.matchLabels, {
        'app.kubernetes.io/component': 'sandbox',
        'app.kubernetes.io/instance': RELEASE,
      })
      t.same(spec.policyTypes.sort(), ['Egress', 'Ingress'])
      t.same(spec.ingress, [], 'no ingress to a sandbox')
      t.same(
        spec.egress[0]?.ports,
        [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
        'DNS',
      )
      const v4 = spec.egress[1]?.to?.find((p) => p.ipBlock.cidr === '0.0.0.0/0')
      for (const cidr of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'])
        t.ok(v4?.ipBlock.except.includes(cidr), `internet egress excludes ${cidr}`)
      t.equal(spec.egress.length, 2, 'nothing else')

      // the workers may create sandbox pods and nothing else
      const role = byKind(set, 'Role').find((r) => r.metadata.name.endsWith('-sandboxes'))
      t.same((role as unknown as { rules: unknown[] } | undefined)?.rules, [
        { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'delete'] },
        { apiGroups: [''], resources: ['pods/attach'], verbs: ['create', 'get'] },
      ])
      t.same(
        byKind(set, 'Service').map(component).sort(),
        ['console', 'gateway'],
        "Services: the gateways', the console's",
      )
      t.equal(byKind(set, 'Ingress').length, 2, "Ingresses: the API's, the console's")
      checkConsole(t, set, docs)
    })
  }

  t.test('the value sets differ where they should', async (t) => {
    const single = rendered.get('single') ?? []
    const production = rendered.get('production') ?? []
    const external = rendered.get('external-nats') ?? []
    const replicas = (docs: Manifest[]) =>
      docs.filter((d) => d.kind === 'Deployment').map((d) => (d.spec as { replicas?: number }).replicas)
    t.same(replicas(single), [1, 1, 1, 1, 1], 'single: one replica of each role and of the console')
    t.equal(single.filter((d) => d.kind === 'HorizontalPodAutoscaler').length, 0, 'single: no autoscaling')
    t.equal(single.filter((d) => d.kind === 'PodDisruptionBudget').length, 0, 'single: no disruption budgets')
    t.equal(
      production.filter((d) => d.kind === 'HorizontalPodAutoscaler').length,
      5,
      'production: an HPA per role and the console',
    )
    t.equal(
      production.filter((d) => d.kind === 'PodDisruptionBudget').length,
      5,
      'production: a PDB per role and the console',
    )
    const ingressAnnotations = (docs: Manifest[], name: string) =>
      (
        docs.find((d) => d.kind === 'Ingress' && d.metadata.name === name)?.metadata as
          | { annotations?: Record<string, string> }
          | undefined
      )?.annotations ?? {}
    t.equal(
      ingressAnnotations(production, consoleName)['nginx.ingress.kubernetes.io/affinity'],
      'cookie',
      'production: a browser stays on one console replica',
    )
    t.notOk(
      ingressAnnotations(production, `${RELEASE}-agent-platform`)['nginx.ingress.kubernetes.io/affinity'],
      "and the API's Ingress is not sticky",
    )

    const natsUrl = (docs: Manifest[]) => envOf(docs.find((d) => d.kind === 'Deployment') as Manifest).get('NATS_URL')
    t.equal(natsUrl(production), `nats://${RELEASE}-nats.${NAMESPACE}.svc:4222`, "production: the chart's own NATS")
    t.ok(
      production.some((d) => d.kind === 'NetworkPolicy' && d.metadata.name.endsWith('-nats')),
      "production: NATS clients only from the platform's pods",
    )
    t.match(natsUrl(external), /^nats:\/\/nats-0\.nats\.messaging\.svc:4222,/, 'external: the given URL')
    t.notOk(
      external.some((d) => d.metadata.name.endsWith('-nats')),
      'external: no NATS objects',
    )
    const gateway = external.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-gateway')) as Manifest
    const workers = external.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-workers')) as Manifest
    const credsSecret = (d: Manifest) =>
      (
        d.spec as { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } } }
      ).template.spec.volumes.find((v) => v.name === 'nats-credentials')?.secret?.secretName
    t.equal(credsSecret(gateway), 'agent-platform-nats-gateway', "external: the gateway's own NATS credentials")
    t.equal(credsSecret(workers), 'agent-platform-nats')
    t.equal(envOf(gateway).get('NATS_CREDS_FILE'), '/etc/agent-platform/nats/nats.creds')
    t.equal(envOf(gateway).get('NATS_INBOX_PREFIX'), '_INBOX_gateway')
    t.match(
      envOf(workers).get('ANALYTICS_PASSWORD'),
      /^secret:agent-platform-analytics\//,
      'analytics password by reference',
    )
    t.equal(envOf(workers).get('ANALYTICS_HOST'), 'clickhouse.analytics.svc')
    const sandboxNs = production.find((d) => d.kind === 'NetworkPolicy' && d.metadata.name.endsWith('-sandbox'))
    t.equal(
      sandboxNs?.metadata.namespace,
      'platform-sandboxes',
      'production: the sandbox policy in the sandbox namespace',
    )
  })

  t.test('every setting the chart sets is one the platform knows, and its configuration loads', async (t) => {
    const { ConfigSchema, loadConfig } = await import('../../src/kernel/config.ts')
    const known = new Set(Object.keys(ConfigSchema.properties))
    for (const set of SETS)
      for (const d of byKind(set, 'Deployment')) {
        const role = d.metadata.labels?.['app.kubernetes.io/component'] as string
        const env: Record<string, string> = {}
        for (const [name, value] of envOf(d)) {
          t.ok(known.has(name), `${set}: ${name} is a setting of docs/configuration.md`)
          // a value from a Secret: something of the right shape in its place
          env[name] = value.startsWith('secret:') ? `${name.toLowerCase()}-from-the-secret-0123456789abcdef` : value
        }
        // the platform's own parser, in production mode, as the pod would run it
        const config = loadConfig(env)
        t.equal(config.NODE_ENV, 'production', `${set} ${role}: the configuration loads`)
        if (role === 'console') {
          t.equal(config.SECRET_KEY, '', `${set} console: loads without any secret (ROLES=console)`)
          t.equal(config.CONSOLE_PORT, 51245)
        } else t.equal(config.PORT, 8000)
      }
  })

  t.test('what helm install prints (NOTES.txt), with a client-side dry run', async (t) => {
    const out = run(helm, [
      'install',
      RELEASE,
      chart,
      '--namespace',
      NAMESPACE,
      '--dry-run=client',
      '-f',
      join(VALUES, 'production.yaml'),
    ])
    t.equal(out.status, 0, out.stderr)
    const notes = out.stdout.slice(out.stdout.indexOf('NOTES:'))
    t.match(notes, `NATS:  nats://${RELEASE}-nats.${NAMESPACE}.svc:4222`)
    t.match(notes, /SANDBOX_EXECUTOR=k8s_pod in namespace platform-sandboxes/)
    t.match(notes, /curl -s localhost:8000\/health/)
    t.match(notes, /Roles: gateway resources workers actors console/)
    t.match(notes, 'Console: https://console.platform.example.com/')
    t.match(notes, `port-forward svc/${consoleName} 51245:80`)
  })

  t.test('roles.console.enabled=false: no console object at all', async (t) => {
    for (const set of SETS) {
      const docs = renderWith(t, set, ['roles.console.enabled=false'])
      const consoleObjects = docs.filter(
        (d) => d.metadata.name.endsWith('-console') || d.metadata.labels?.['app.kubernetes.io/component'] === 'console',
      )
      t.same(
        consoleObjects.map((d) => `${d.kind}/${d.metadata.name}`),
        [],
        `${set}: no Deployment, Service, Ingress, policy, HPA or PDB of the console`,
      )
      t.equal(docs.filter((d) => d.kind === 'Deployment').length, 4, `${set}: the four platform roles still`)
      t.equal(docs.filter((d) => d.kind === 'Ingress').length, 1, `${set}: the API's Ingress still`)
      const gateway = docs.find((d) => d.kind === 'NetworkPolicy' && d.metadata.name.endsWith('-gateway'))
      t.notMatch(JSON.stringify(gateway?.spec ?? {}), /console/, `${set}: the gateways' policy names no console`)
    }
    const noGateway = run(helm, [
      'template',
      RELEASE,
      chart,
      '-f',
      join(VALUES, 'single.yaml'),
      '--set',
      'roles.gateway.enabled=false',
    ])
    t.not(noGateway.status, 0, 'a console without a gateway to proxy to is refused')
    t.match(noGateway.stderr, /roles\.console needs roles\.gateway/)
    const other = renderWith(t, 'single', [
      'console.containerPort=9090',
      'console.service.port=8080',
      'service.port=8888',
      'ingress.console.host=ui.example.org',
      'fullnameOverride=ap',
    ])
    const deployment = other.find((d) => d.kind === 'Deployment' && d.metadata.name === 'ap-console') as Manifest
    t.equal(envOf(deployment).get('CONSOLE_PORT'), '9090')
    t.equal(
      envOf(deployment).get('CONSOLE_API_URL'),
      `http://ap-gateway.${NAMESPACE}.svc:8888`,
      'follows the gateway Service',
    )
    const ingress = other.find((d) => d.kind === 'Ingress' && d.metadata.name === 'ap-console')
    t.match(ingress?.spec, {
      rules: [{ host: 'ui.example.org' }],
      tls: [{ hosts: ['ui.example.org'], secretName: 'ap-console-tls' }],
    })
  })

  t.test("the console's TRUSTED_PROXIES: console.trustedProxies, else platform.trustedProxies", async (t) => {
    const trustedOf = (docs: Manifest[], component: string) =>
      envOf(
        docs.find(
          (d) => d.kind === 'Deployment' && d.metadata.labels?.['app.kubernetes.io/component'] === component,
        ) as Manifest,
      ).get('TRUSTED_PROXIES')
    const fallback = renderWith(t, 'single', ['platform.trustedProxies=10.0.0.0/8'])
    t.equal(trustedOf(fallback, 'console'), '10.0.0.0/8', 'unset: the platform value')
    t.equal(trustedOf(fallback, 'gateway'), '10.0.0.0/8')
    const narrowed = renderWith(t, 'production', ['console.trustedProxies=10.42.7.0/24\\,fd00::/8'])
    t.equal(trustedOf(narrowed, 'console'), '10.42.7.0/24,fd00::/8', "set: the console's own (the ingress controller)")
    t.equal(trustedOf(narrowed, 'gateway'), '10.0.0.0/8', "the gateways keep the platform's")
    const named = run(helm, [
      'template',
      RELEASE,
      chart,
      '-f',
      join(VALUES, 'single.yaml'),
      '--set',
      'console.trustedProxies=ingress.internal',
    ])
    t.not(named.status, 0, 'a host name is refused (the platform would refuse it at start)')
    t.match(named.stderr, /trustedProxies/)
  })

  t.test('required values are asked for by name, wrong ones refused', async (t) => {
    const out = run(helm, ['template', RELEASE, chart, '--set', 'nats.url=nats://n:4222'])
    t.not(out.status, 0)
    t.match(out.stderr, /platform\.domain is required/)
    const noNats = run(helm, [
      'template',
      RELEASE,
      chart,
      '--set',
      'platform.domain=a.example.com,platform.superadminEmail=a@example.com,secrets.existingSecret=s,database.existingSecret=d',
    ])
    t.not(noNats.status, 0)
    t.match(noNats.stderr, /nats\.url is required/)
    const typo = run(helm, [
      'template',
      RELEASE,
      chart,
      '-f',
      join(VALUES, 'single.yaml'),
      '--set',
      'executor.mode=k8spod',
    ])
    t.not(typo.status, 0, 'values.schema.json refuses an unknown executor mode')
    t.match(typo.stderr, /executor\/mode/)
    const role = run(helm, [
      'template',
      RELEASE,
      chart,
      '-f',
      join(VALUES, 'single.yaml'),
      '--set',
      'roles.gatway.replicas=2',
    ])
    t.not(role.status, 0, 'and a misspelt role')
    t.match(role.stderr, /gatway/)
  })
}
