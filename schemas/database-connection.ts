import { Type as T } from '@sinclair/typebox'

/*
 * Database connection fields. `connection_type`: `postgresql`, `clickhouse` (the
 * columnar-analytics type, spoken over its HTTP interface) and `snowflake` (the cloud warehouse,
 * spoken over its REST SQL API). `password` is write-only: encrypted at rest, never returned; for
 * Snowflake it holds the OAuth or programmatic access token the SQL API takes.
 */
export const CONNECTION_TYPES = ['postgresql', 'clickhouse', 'snowflake'] as const
export const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full'] as const

export const ConnectionPoolConfig = T.Object(
  {
    min_pool_size: T.Optional(
      T.Integer({
        minimum: 0,
        maximum: 100,
        description: 'connections kept open while idle (default DATABASE_POOL_MIN_SIZE)',
      }),
    ),
    max_pool_size: T.Optional(
      T.Integer({ minimum: 1, maximum: 100, description: 'connections at most (default DATABASE_POOL_MAX_SIZE)' }),
    ),
    // Snowflake only
    account: T.Optional(
      T.String({
        maxLength: 255,
        description: 'snowflake: account identifier (informational; the host names the account)',
      }),
    ),
    warehouse: T.Optional(T.String({ maxLength: 255, description: 'snowflake: warehouse' })),
    schema: T.Optional(T.String({ maxLength: 255, description: 'snowflake: schema' })),
    role: T.Optional(
      T.String({
        maxLength: 255,
        description: 'snowflake: role for write queries (and read queries without read_role)',
      }),
    ),
    read_role: T.Optional(
      T.String({ maxLength: 255, description: 'snowflake: role for read queries (grant it SELECT only)' }),
    ),
    token_type: T.Optional(
      T.Union([T.Literal('OAUTH'), T.Literal('PROGRAMMATIC_ACCESS_TOKEN'), T.Literal('KEYPAIR_JWT')], {
        description: 'snowflake: X-Snowflake-Authorization-Token-Type (default OAUTH)',
      }),
    ),
  },
  { additionalProperties: true, default: {} },
)

export const DatabaseConnectionSpec = T.Object(
  {
    connection_type: T.Union(
      CONNECTION_TYPES.map((c) => T.Literal(c)),
      {
        description:
          'postgresql, clickhouse (columnar analytics, HTTP interface) or snowflake (warehouse, REST SQL API)',
      },
    ),
    host: T.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[A-Za-z0-9._:\\-\\[\\]]+$',
      description: 'host name or address',
    }),
    port: T.Union([T.Integer({ minimum: 1, maximum: 65535 }), T.Null()], {
      default: null,
      description: 'null: 5432 (postgresql), 8123 or 8443 with TLS (clickhouse), 443 (snowflake)',
    }),
    database: T.String({ default: '', maxLength: 255 }),
    username: T.String({ default: '', maxLength: 255 }),
    password: T.Union([T.String({ maxLength: 8192 }), T.Null()], { default: null, description: 'write-only' }),
    ssl_mode: T.Union([T.Union(SSL_MODES.map((m) => T.Literal(m))), T.Null()], {
      default: null,
      description:
        'postgresql: as libpq (null = prefer… treated as disable); clickhouse/snowflake: disable = plain http, anything else https (snowflake default https)',
    }),
    config: ConnectionPoolConfig,
    allow_platform_database: T.Boolean({
      default: false,
      description:
        "postgresql: the connection may lead to the platform's own database (same host, port and database as the platform's); refused unless set",
    }),
  },
  { additionalProperties: false },
)

/** `POST /api/v1/database-connections/test`: raw connection parameters, nothing stored. */
export const ConnectionTestBody = T.Object(
  {
    connection_type: DatabaseConnectionSpec.properties.connection_type,
    host: DatabaseConnectionSpec.properties.host,
    port: T.Optional(DatabaseConnectionSpec.properties.port),
    database: T.Optional(T.String({ maxLength: 255 })),
    username: T.Optional(T.String({ maxLength: 255 })),
    password: T.Optional(T.Union([T.String({ maxLength: 8192 }), T.Null()])),
    ssl_mode: T.Optional(DatabaseConnectionSpec.properties.ssl_mode),
    config: T.Optional(ConnectionPoolConfig),
    allow_platform_database: T.Optional(DatabaseConnectionSpec.properties.allow_platform_database),
  },
  { additionalProperties: false, title: 'DatabaseConnectionTest' },
)

export const ConnectionTestResult = T.Object(
  {
    success: T.Boolean(),
    message: T.String({ description: 'the server version on success, the failure otherwise' }),
    server_version: T.Union([T.String(), T.Null()]),
    duration_ms: T.Number(),
    warnings: T.Array(T.String(), {
      description:
        "postgresql: what the connected role may do beyond a query author's business (a superuser, pg_read_server_files, pg_execute_server_program, pg_write_server_files): use a role without them",
    }),
  },
  { title: 'DatabaseConnectionTestResult' },
)
