-- Usage accounting (src/usage/, docs/operations.md "Usage and budgets"): the tokens and the
-- provider's reported cost of every LLM call, rolled up per UTC day as they are recorded, so
-- GET /api/v1/usage reads a few rows per day instead of scanning messages, and a turn's budget
-- check is one primary-key read.
--
-- usage_daily: one row per (day, user, agent, provider, model). `agent` is `<namespace>/<name>`
-- ('' for the OpenAI adapter's provider models, which run no agent); agent_id is the agent's id
-- when there is one (a filter by id), not part of the key (PostgreSQL 13 has no NULLS NOT
-- DISTINCT). `cost` is the sum of the costs the provider reported (OpenAI-compatible gateways
-- such as OpenRouter put one in `usage.cost`); null while none was reported: no price is invented.
create table usage_daily (
  day date not null,
  user_id uuid not null references users(id) on delete cascade,
  agent text not null,
  agent_id uuid,
  provider text not null,
  model text not null,
  prompt_tokens bigint not null default 0,
  completion_tokens bigint not null default 0,
  total_tokens bigint not null default 0,
  cost numeric,
  calls integer not null default 0,
  primary key (day, user_id, agent, provider, model)
);
create index usage_daily_user on usage_daily (user_id, day);

-- usage_user_day: a user's tokens per UTC day, all agents and models together: what the daily
-- token budget is checked against (one primary-key read per turn).
create table usage_user_day (
  user_id uuid not null references users(id) on delete cascade,
  day date not null,
  total_tokens bigint not null default 0,
  primary key (user_id, day)
);

-- One record of usage (src/usage/record.ts, `UsageEntry` as jsonb) added to both rollups. The
-- caller's transaction is this statement's: a turn records its usage in the same call that writes
-- its messages (chat_append_turn below). Both upserts lock their rows in the same order
-- (usage_daily, then usage_user_day), so concurrent turns of one user wait, never deadlock.
create function usage_record(p jsonb)
returns void
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
  insert into usage_daily as u (day, user_id, agent, agent_id, provider, model, prompt_tokens, completion_tokens, total_tokens, cost, calls)
  values ((p->>'day')::date, (p->>'user_id')::uuid, p->>'agent', (p->>'agent_id')::uuid, p->>'provider', p->>'model',
    (p->>'prompt_tokens')::bigint, (p->>'completion_tokens')::bigint, (p->>'total_tokens')::bigint, (p->>'cost')::numeric,
    (p->>'calls')::integer)
  on conflict (day, user_id, agent, provider, model) do update set
    prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = u.completion_tokens + excluded.completion_tokens,
    total_tokens = u.total_tokens + excluded.total_tokens,
    cost = case when u.cost is null and excluded.cost is null then null else coalesce(u.cost, 0) + coalesce(excluded.cost, 0) end,
    calls = u.calls + excluded.calls,
    agent_id = coalesce(excluded.agent_id, u.agent_id);
  insert into usage_user_day as d (user_id, day, total_tokens)
  values ((p->>'user_id')::uuid, (p->>'day')::date, (p->>'total_tokens')::bigint)
  on conflict (user_id, day) do update set total_tokens = d.total_tokens + excluded.total_tokens;
end
$$;

-- A turn's messages (0020's chat_append_messages) and the usage of the LLM calls since its last
-- write, in one call and so one transaction. The usage is recorded only when the write took: the
-- chat still exists and, for a batch retried after an unclear failure (src/chats/transcript.ts),
-- something of the batch was new (a batch found written already was recorded with it). A batch
-- of no messages (a failed turn's last calls) records its usage alone.
create function chat_append_turn(p_chat_id uuid, p_messages jsonb, p_usage jsonb, out o_count bigint, out o_rows json)
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
  select a.o_count, a.o_rows into o_count, o_rows from chat_append_messages(p_chat_id, p_messages) a;
  if p_usage is not null and o_count is not null
     and (jsonb_array_length(p_messages) = 0 or json_array_length(o_rows) > 0) then
    perform usage_record(p_usage);
  end if;
end
$$;
