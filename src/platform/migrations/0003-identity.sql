-- Login: one-time codes (stored hashed) and refresh tokens in families (rotation, reuse detection).

create table otp_sessions (
  id uuid primary key,
  email text not null,
  -- null for an unknown email: the session exists so the answer looks the same, but never verifies
  user_id uuid references users (id) on delete cascade,
  code_hash text not null,
  attempts integer not null default 0,
  expires_at timestamptz not null,
  consumed_at timestamptz,
  created_at timestamptz not null default now()
);

create table refresh_tokens (
  id uuid primary key,
  family_id uuid not null,
  user_id uuid not null references users (id) on delete cascade,
  token_hash text not null unique,
  expires_at timestamptz not null,
  used_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index refresh_tokens_family_idx on refresh_tokens (family_id);
