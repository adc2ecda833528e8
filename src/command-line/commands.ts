/*
 * Every command of `platform` with its arguments and options, as data: the argument parser
 * (args.ts), `--help` (help.ts) and the generated reference docs/cli.md all read this one table,
 * so a new option is declared once and documented everywhere.
 */

export interface OptionSpec {
  /** Long name without the dashes. */
  readonly name: string
  /** The value's placeholder (`URL`); absent for a flag that takes no value. */
  readonly value?: string
  readonly about: string
  /** May be given more than once (the values are collected in order). */
  readonly repeat?: boolean
}

export interface CommandSpec {
  /** One or two words: `login`, `config diff`. */
  readonly name: string
  /** The positional arguments as shown in the usage line (`<file|->`). */
  readonly args: string
  /** How many positional arguments it takes at least and at most. */
  readonly positional: readonly [min: number, max: number]
  readonly summary: string
  readonly options: readonly OptionSpec[]
  /** Further lines for `--help` and the reference (exit codes, what is sent). */
  readonly details?: readonly string[]
}

const OUTPUT: OptionSpec = { name: 'output', value: 'FORMAT', about: '`text` (default) or `json`' }
const JSON_FLAG: OptionSpec = { name: 'json', about: 'the same as `--output json`' }
const INTERPOLATE: OptionSpec = {
  name: 'no-interpolate',
  about: 'send the file as it is: leave every `${VAR}` to the server',
}
const ENV_DETAIL =
  "`${VAR}` in string values is replaced here from this shell's environment before the file is sent (`$${VAR}` stays the literal `${VAR}`); a variable not set here is left for the server, which replaces it from its own environment or names it missing."
const VARS: readonly OptionSpec[] = [
  { name: 'var', value: 'NAME=VALUE', about: 'a package variable (repeat for several)', repeat: true },
  { name: 'values', value: 'FILE', about: 'package variables from a YAML or JSON mapping (`--var` wins)' },
]

/** Options every command takes. */
export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'url',
    value: 'URL',
    about: 'the platform (default: `PLATFORM_URL`, else the stored one, else http://localhost:8000)',
  },
  { name: 'help', about: 'this help' },
]

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'login',
    args: '',
    positional: [0, 0],
    summary: 'Log in and store the credentials for the next commands',
    options: [
      {
        name: 'email',
        value: 'EMAIL',
        about: "log in as this user (password or emailed code, as the platform's AUTH_MODE asks)",
      },
      { name: 'password', value: 'PASSWORD', about: 'the password (default: `PLATFORM_PASSWORD`, else asked for)' },
      { name: 'code', value: 'CODE', about: 'the emailed 6-digit code (default: asked for)' },
      { name: 'token', value: 'TOKEN', about: 'store this access token instead of logging in' },
      { name: 'api-key', value: 'KEY', about: 'store this API key instead of logging in' },
    ],
    details: [
      'The credentials go to `$XDG_CONFIG_HOME/agent-platform/credentials.json` (else `~/.config/agent-platform/credentials.json`), mode 0600 in a 0700 folder. An expired access token is renewed with the stored refresh token. `PLATFORM_URL` and `PLATFORM_TOKEN` override what is stored.',
    ],
  },
  {
    name: 'logout',
    args: '',
    positional: [0, 0],
    summary: 'Revoke the stored refresh token and forget the credentials',
    options: [],
  },
  {
    name: 'whoami',
    args: '',
    positional: [0, 0],
    summary: 'The user the stored credentials log in as',
    options: [OUTPUT],
  },
  {
    name: 'config validate',
    args: '<file|->',
    positional: [1, 1],
    summary: 'Check a PlatformConfig file: syntax, shape and references',
    options: [OUTPUT, INTERPOLATE],
    details: [ENV_DETAIL, 'Exit code: 0 valid, 1 invalid or failed.'],
  },
  {
    name: 'config diff',
    args: '<file|->',
    positional: [1, 1],
    summary: 'What applying a config would change, resource by resource and field by field',
    options: [OUTPUT, INTERPOLATE, { name: 'force', about: 'plan taking over resources managed by others' }],
    details: [
      ENV_DETAIL,
      'Prints `+` create, `~` update (with the fields), `-` delete, `=` unchanged; coloured on a terminal unless `NO_COLOR` is set.',
      'Exit code: 0 no changes, 2 changes, 1 error (for CI).',
    ],
  },
  {
    name: 'config apply',
    args: '<file|->',
    positional: [1, 1],
    summary: 'Apply a config: one transaction, all or nothing',
    options: [
      OUTPUT,
      INTERPOLATE,
      { name: 'dry-run', about: 'print the plan, change nothing' },
      { name: 'force', about: 'take over resources managed by others (or created by hand)' },
    ],
    details: [ENV_DETAIL, 'Exit code: 0 applied (or planned), 1 error.'],
  },
  {
    name: 'config export',
    args: '',
    positional: [0, 0],
    summary: 'The current configuration as a PlatformConfig YAML (secret values omitted)',
    options: [],
  },
  {
    name: 'package preview',
    args: '<file|->',
    positional: [1, 1],
    summary: 'What installing a package would change, and the variables it asks for',
    options: [OUTPUT, ...VARS],
    details: ['Exit code: 0 no changes, 2 changes, 1 error.'],
  },
  {
    name: 'package install',
    args: '<file|->',
    positional: [1, 1],
    summary: 'Install a package (again: update it in place)',
    options: [OUTPUT, ...VARS],
  },
  {
    name: 'package uninstall',
    args: '<name>',
    positional: [1, 1],
    summary: 'Delete a package and every resource it still manages',
    options: [],
  },
  {
    name: 'package list',
    args: '',
    positional: [0, 0],
    summary: 'The installed packages',
    options: [OUTPUT],
  },
  {
    name: 'package export',
    args: '<name>',
    positional: [1, 1],
    summary: 'The YAML an installed package was installed from',
    options: [],
  },
  {
    name: 'package create',
    args: '',
    positional: [0, 0],
    summary: 'A package YAML made of existing resources',
    options: [
      { name: 'name', value: 'NAME', about: 'the package name (required)' },
      { name: 'version', value: 'VERSION', about: 'the package version (default 0.1.0)' },
      { name: 'author', value: 'TEXT', about: 'the package author' },
      { name: 'description', value: 'TEXT', about: 'the package description' },
      {
        name: 'resource',
        value: 'TYPE:NS/NAME',
        about:
          'a resource to include, e.g. `function:demo/double`, or `TYPE:NAME` for a named one (`webhook:hooks/in`: its path) (repeat for several)',
        repeat: true,
      },
    ],
  },
  {
    name: 'run',
    args: '<namespace>/<function>',
    positional: [1, 1],
    summary: 'Run a function and print its result',
    options: [
      {
        name: 'input',
        value: 'JSON|@FILE',
        about: 'the input: JSON text, or `@file` to read it from a file (default `{}`)',
      },
      { name: 'timeout', value: 'SECONDS', about: "give up after this long (at most the function's own timeout)" },
      OUTPUT,
    ],
    details: ['Exit code: 0 success, 1 error or timeout. The result goes to stdout, the error to stderr.'],
  },
  {
    name: 'chat',
    args: '<namespace>/<agent>',
    positional: [1, 1],
    summary: 'Chat with an agent in the terminal; the answer streams as it is written',
    options: [
      { name: 'input', value: 'JSON|@FILE', about: "the chat's input (the agent's input_schema)" },
      { name: 'message', value: 'TEXT', about: 'send this one message, print the answer and exit' },
    ],
    details: [
      'Each line you type is a message; tool calls are shown as they start and end. A tool call waiting for approval (`requires_approval`) is asked about (`y` allows it, anything else rejects it) and the turn goes on. Ctrl-C stops the current turn (the platform cancels a turn nobody listens to); Ctrl-C at the prompt, or Ctrl-D, exits.',
    ],
  },
  {
    name: 'events tail',
    args: '[filter]',
    positional: [0, 1],
    summary: 'Follow execution events live',
    options: [OUTPUT],
    details: [
      'The filter is a NATS subject filter below `events.execution.`: `<namespace>.<name>.<status>` with `*` for one token and `>` for the rest (default `>`, every execution). You see the executions of the functions you may read (admins: all).',
    ],
  },
  {
    name: 'actors hosts',
    args: '',
    positional: [0, 0],
    summary: 'The actor hosts, their state and the partitions each owns (admin)',
    options: [OUTPUT, JSON_FLAG],
    details: [
      "A host is `active` (takes its share), `draining` (asked to drain or stopping: hands its partitions off), `drained` (owns none: it can be stopped) or `gone` (no heartbeat, its leases not expired yet). BACKLOG sums its partitions' mailbox backlogs, OLDEST is the age of the oldest message waiting in one of them. `--output json` adds every owned partition. Exit code: 0, 1 error.",
    ],
  },
  {
    name: 'actors partitions',
    args: '',
    positional: [0, 0],
    summary: "Every actor type's partitions: owner, lease, mailbox backlog and oldest message (admin)",
    options: [
      OUTPUT,
      JSON_FLAG,
      { name: 'type', value: 'TYPE', about: 'only this actor type (`chat`, `schedule`, `db-trigger`, `pool`)' },
      { name: 'host', value: 'NODE', about: 'only the partitions this host owns' },
    ],
    details: ['Exit code: 0, 1 error or unknown type.'],
  },
  {
    name: 'actors drain',
    args: '<node-id>',
    positional: [1, 1],
    summary:
      'Drain an actor host: it hands every partition to the other hosts, finishing its turns in progress (admin)',
    options: [
      OUTPUT,
      JSON_FLAG,
      { name: 'wait', about: 'wait until the host owns no partition' },
      { name: 'timeout', value: 'SECONDS', about: 'with `--wait`: give up after this long (default 300)' },
    ],
    details: [
      'The host stops acquiring and releases its partitions one by one on its next ticks; the other hosts take each over on their next tick. A drained host keeps running (and owning nothing) until it is stopped or `platform actors undrain` is run. Refused (409) for the only active host. Exit code: 0 drain requested (with `--wait`: drained), 1 error or timeout.',
    ],
  },
  {
    name: 'actors undrain',
    args: '<node-id>',
    positional: [1, 1],
    summary: 'Cancel a drain: the host takes its share of the partitions again (admin)',
    options: [OUTPUT, JSON_FLAG],
    details: ['Exit code: 0, 1 error.'],
  },
  {
    name: 'nats-config',
    args: '<plan|->',
    positional: [1, 1],
    summary: 'Write the nats-server configs and credentials of a hub cluster and a leaf node per region',
    options: [
      { name: 'dir', value: 'DIR', about: 'where the configs, seeds (0600) and the hub stores go (required)' },
      OUTPUT,
    ],
    details: [
      "The plan (YAML or JSON): `hub` (each server's `host`, `clientPort`, `clusterPort`, `leafPort`), `regions` (`name`, the leaf's `host` and `clientPort`, `hubLeafAddresses` it dials, `events: true` for a region events user), optional `tls` (`caFile`, `certFile`, `keyFile`), `prefix` (NATS_PREFIX). Seeds and passwords already under --dir are kept. Local only: no platform is contacted. The layout: docs/multi-region.md; who may do what: docs/nats-security.md.",
    ],
  },
  {
    name: 'install',
    args: '',
    positional: [0, 0],
    summary: 'Write the systemd units and the Caddy site that run the platform on this server',
    options: [
      {
        name: 'domain',
        value: 'DOMAIN',
        about: 'the public domain: Caddy gets its certificate and proxies it to the gateway (required)',
      },
      { name: 'dir', value: 'DIR', about: 'write under this root instead of `/` (e.g. to look at the files first)' },
      { name: 'dry-run', about: 'print the files (secrets masked), write nothing' },
      {
        name: 'split',
        about:
          'one service per role (gateway, resources, workers, actors) and `agent-platform.target`, instead of one service running every role',
      },
      { name: 'nats-url', value: 'URL', about: 'with `--split`: the NATS server(s) the roles share' },
      { name: 'database-url', value: 'URL', about: 'with `--split`: the Postgres the roles share' },
      { name: 'email', value: 'EMAIL', about: 'the superadmin and the ACME account (default `admin@DOMAIN`)' },
      { name: 'port', value: 'PORT', about: "the gateway's port on 127.0.0.1 (default 8000)" },
      {
        name: 'user',
        value: 'USER',
        about: 'the user the services run as (default `root`: sandboxes then get an outer uid each)',
      },
      {
        name: 'app-dir',
        value: 'DIR',
        about: 'the platform checkout the services run (default: the one this command is from)',
      },
    ],
    details: [
      'Writes `/etc/agent-platform/platform.env` (mode 0600: production settings with a generated `SECRET_KEY`, `ENCRYPTION_KEY` and `DATABASE_PASSWORD`; kept as it is when it exists, since stored data depends on its keys), `/etc/systemd/system/agent-platform.service` (or with `--split` one `agent-platform-<role>.service` each and `agent-platform.target`) and `/etc/caddy/Caddyfile` (an existing one is saved as `Caddyfile.before-agent-platform`). It starts nothing: it prints the `systemctl` commands to run. The `--url` option does not apply.',
    ],
  },
]

/** A command by its words, or undefined. */
export function commandNamed(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name)
}
