-- Connector OAuth 2 (src/connectors/oauth.ts): started authorization-code flows and the tokens a
-- user obtained for a connector. Secrets (the PKCE verifier, access and refresh tokens) are stored
-- encrypted with the platform's secret box (AES-256-GCM, the row bound in as associated data).

create table connector_oauth_flows (
  -- the `state` parameter: 32 random bytes, single use
  state text primary key,
  -- SHA-256 (hex) of the browser-binding nonce cookie; null when OAUTH_BIND_BROWSER_SESSION is off
  nonce_hash text,
  user_id uuid not null references users (id) on delete cascade,
  connector_id uuid not null references resources (id) on delete cascade,
  code_verifier text not null,
  redirect_uri text not null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index connector_oauth_flows_expires on connector_oauth_flows (expires_at);

create table connector_oauth_tokens (
  id uuid primary key,
  user_id uuid not null references users (id) on delete cascade,
  connector_id uuid not null references resources (id) on delete cascade,
  access_token text not null,
  refresh_token text,
  token_type text not null default 'bearer',
  scope text,
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (user_id, connector_id)
);
