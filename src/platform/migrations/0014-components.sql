-- Components (src/components/): compiled bundles, share links and the view tickets of rendered pages.

-- The compiled_bundle of a component (docs/connectors-and-components.md), kept beside the resource: set only by compilation, stale
-- when source_sha256 no longer matches the source (render compiles again).
create table component_bundles (
  component_id uuid primary key references resources (id) on delete cascade,
  source_sha256 text not null,
  bundle text not null,
  warnings jsonb not null default '[]'::jsonb,
  compiled_at timestamptz not null default now()
);

-- Share links. The token is derived from the id (HMAC with SECRET_KEY), so no token is stored:
-- only its SHA-256 for lookup. Views are counted by one conditional UPDATE (views < max_views).
create table component_shares (
  id uuid primary key default gen_random_uuid(),
  component_id uuid not null references resources (id) on delete cascade,
  token_hash text not null unique,
  created_by uuid references users (id) on delete set null,
  expires_at timestamptz,
  max_views integer check (max_views is null or max_views > 0),
  views integer not null default 0,
  created_at timestamptz not null default now(),
  check (max_views is null or views <= max_views)
);
create index component_shares_component on component_shares (component_id);

-- What a rendered page may call its proxies with: an opaque ticket (stored hashed) naming the
-- component, who the calls run as (the viewer, or the owner for a share page; null = nobody)
-- and, for a share page, its link. It is not a platform token: it opens nothing else.
create table component_view_tickets (
  ticket_hash text primary key,
  component_id uuid not null references resources (id) on delete cascade,
  acting_user_id uuid references users (id) on delete cascade,
  share_id uuid references component_shares (id) on delete cascade,
  -- the viewer's permissions when the page was rendered (an API key's are narrower than its
  -- owner's); each call runs with these ∩ the user's live ones. null = the user's live ones.
  permissions jsonb,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index component_view_tickets_expiry on component_view_tickets (expires_at);
