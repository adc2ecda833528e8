/*
 * The dependency rules of the code, as data: the layers (lowest first), the groups in each, how a
 * file maps to its group, and what is not scanned. `layers.test.ts` checks every relative import
 * of the scanned folders against it. A group may import its own layer or a lower one, and the
 * graph of groups has no cycle.
 *
 * A new folder under src/ or actors/ is a new group: add it to the layer it belongs to here, or
 * the test fails ("put the new folder in a layer").
 */

export interface Layer {
  readonly name: string
  /** What the layer is for (shown in the failure messages). */
  readonly about: string
  readonly groups: readonly string[]
}

export const LAYERS: readonly Layer[] = [
  {
    name: 'client',
    about:
      'the web console (browser code): imports nothing of the server code; its API types are generated into console/src/api/types.generated.ts',
    groups: ['console'],
  },
  {
    name: 'base',
    about: 'config, log, errors, ids, JSON Schema helpers; no feature knowledge',
    groups: ['src/kernel', 'schemas'],
  },
  {
    name: 'platform',
    about: 'db, nats, outbound http; the pure template renderer',
    // src/command-line: the `platform` command, a client of the HTTP API (kernel and schemas only);
    // src/events/client: the events client library (`agent-platform/events`), no platform service
    groups: ['src/platform', 'src/templates', 'src/command-line', 'src/events/client'],
  },
  { name: 'auth', about: 'principal, permissions, tokens, the principal cache', groups: ['src/auth'] },
  {
    name: 'api',
    about: 'route definitions, bind, rpc (no feature or service types); stream channels',
    groups: ['src/api', 'src/streaming'],
  },
  {
    name: 'engines',
    about: 'resource engine, jobs, actor runtime, sandboxes, actor protocols, the gateway (imports no feature)',
    // src/console: the console's server (static files, the session proxy, its build and API types)
    groups: ['src/resources', 'src/jobs', 'actors/runtime', 'sandbox', 'actors/protocols', 'gateway', 'src/console'],
  },
  { name: 'contract', about: 'the Feature contract: defineFeature and its contexts', groups: ['src/feature'] },
  {
    name: 'features',
    about: 'every feature and each actor behaviour; may import each other without a cycle',
    groups: [
      'src/jobs (feature entry)',
      'src/resources (feature entry)',
      'src/access',
      'src/adapter',
      'src/analytics',
      'src/chats',
      'src/components',
      'src/connectors',
      'src/data',
      'src/db-triggers',
      'src/dependencies',
      'src/events',
      'src/discovery',
      'src/files',
      'src/functions',
      'src/gitops',
      'src/identity',
      'src/kinds',
      'src/llm',
      'src/manifests',
      'src/mcp',
      'src/mcp-servers',
      'src/namespaces',
      'src/schedules',
      'src/states',
      'src/system',
      'src/template-api',
      'src/usage',
      'src/webhooks',
      'actors/chat',
      'actors/db-trigger',
      'actors/pool',
      'actors/schedule',
    ],
  },
  {
    name: 'composition',
    about: 'the composition root: main, cli, the feature list, bootstrap, roles, the actor list',
    groups: ['composition'],
  },
]

/** The folders scanned (relative to the repository root). tests/ and bench/ may import anything. */
export const SCANNED_DIRS: readonly string[] = ['src', 'actors', 'gateway', 'sandbox', 'schemas', 'console']

/** The extensions of the scanned files. */
export const SCANNED_EXTENSIONS: readonly string[] = ['.ts', '.tsx', '.js']

/** Paths (prefixes, relative to the repository root) not scanned, each with its reason. */
export const NOT_SCANNED: Readonly<Record<string, string>> = {
  'sandbox/runner/': 'the Python runner inside the sandbox: no TypeScript imports',
  'console/node_modules/': 'installed packages',
}

/**
 * How a file (path relative to the repository root, `/` separators) maps to its group: the first
 * rule whose pattern matches; `$1`, `$2` are the pattern's captures. A file no rule matches has no
 * group, and an import of it is not checked (a JSON file, package.json).
 */
export interface GroupRule {
  readonly pattern: RegExp
  readonly group: string
}

export const GROUP_RULES: readonly GroupRule[] = [
  // An engine that also serves routes has a feature entry: its `module.ts` (the Feature object that
  // binds its routes) sits with the features, above the contract it imports, while the engine
  // itself stays below it.
  { pattern: /^src\/(jobs|resources)\/module\.ts$/, group: 'src/$1 (feature entry)' },
  // the composition root is one group: the files directly in src/ and actors/, and src/roles (what
  // each role starts) which main.ts runs and which uses the feature list and bootstrap
  { pattern: /^(src|actors)\/[^/]+$/, group: 'composition' },
  { pattern: /^src\/roles\//, group: 'composition' },
  // a client library inside a feature's folder: its own group, low enough for any service to use
  { pattern: /^src\/events\/client\//, group: 'src/events/client' },
  { pattern: /^(src|actors)\/([^/]+)\//, group: '$1/$2' },
  { pattern: /^(gateway|sandbox|schemas|console)\//, group: '$1' },
]
