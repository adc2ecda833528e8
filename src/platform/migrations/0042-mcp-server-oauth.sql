-- Remote MCP servers with `auth.type: oauth` (src/mcp-servers/oauth.ts): what was discovered about
-- a server's authorization server (RFC 9728 protected-resource metadata, RFC 8414 metadata) and the
-- client the platform uses there (registered dynamically, RFC 7591, or configured), one row per
-- server. Kept only while the server's URL, the redirect URI and the configured client id are the
-- ones it was made for: a change discovers again and drops every user's tokens for the server
-- (they belong to the old authorization server). Flows and tokens themselves are the shared OAuth
-- client's rows (connector_oauth_flows / connector_oauth_tokens, keyed by the resource id).
create table mcp_server_oauth_clients (
  server_id uuid primary key references resources (id) on delete cascade,
  server_url text not null,
  redirect_uri text not null,
  -- auth.client_id it was made for; null when the client was registered dynamically
  configured_client_id text,
  issuer text not null,
  authorization_endpoint text not null,
  token_endpoint text not null,
  revocation_endpoint text,
  -- the RFC 8707 resource indicator sent with authorization and token requests
  resource text not null,
  -- the scopes asked for (space-separated; empty: none named)
  scope text not null default '',
  client_id text not null,
  -- a registered client's secret, encrypted (the secret box, the server id bound in); null for public clients
  client_secret text,
  created_at timestamptz not null default now()
);
