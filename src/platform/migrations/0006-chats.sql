-- Chats and their messages (docs/agents-and-chats.md). A chat belongs to one user and one
-- agent; messages keep their order by a per-database sequence.
create table chats (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references users(id) on delete cascade,
  agent_id uuid not null,
  agent_namespace text not null,
  agent_name text not null,
  title text,
  input jsonb not null default '{}'::jsonb,
  archived boolean not null default false,
  session_key text,
  expires_at timestamptz,
  active_channel_id text,
  -- set for chats a sub-agent call or the OpenAI adapter made (hidden from GET /chats)
  internal boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  last_message_at timestamptz
);
create index chats_user on chats (user_id, archived, updated_at desc);
create index chats_expiry on chats (expires_at) where expires_at is not null;
-- one live session chat per (user, agent, session_key); reset archives the old one
create unique index chats_session on chats (user_id, agent_namespace, agent_name, session_key) where session_key is not null and not archived;

create table chat_messages (
  id uuid primary key default gen_random_uuid(),
  chat_id uuid not null references chats(id) on delete cascade,
  seq bigserial,
  role text not null check (role in ('user', 'assistant', 'system', 'tool')),
  content text,
  tool_calls jsonb,
  tool_call_id text,
  name text,
  created_at timestamptz not null default now()
);
create index chat_messages_chat on chat_messages (chat_id, seq);

-- tool calls waiting for a user's decision (requires_approval functions)
create table chat_approvals (
  chat_id uuid not null references chats(id) on delete cascade,
  tool_call_id text not null,
  function_namespace text not null,
  function_name text not null,
  arguments jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'approved', 'rejected')),
  created_at timestamptz not null default now(),
  primary key (chat_id, tool_call_id)
);
