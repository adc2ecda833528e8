-- A turn's messages in one call (src/chats/store.ts, appendMany): written, counted on the chat,
-- and returned as JSON with their seq. The statement lives in a PL/pgSQL function because PL/pgSQL
-- keeps a statement's plan for the session, while the same statement sent as an unnamed query
-- (what the driver sends) is parsed and planned again on every call. Planning this one cost
-- Postgres more than running it: 0.24-0.50 ms against 0.08-0.32 ms (EXPLAIN ANALYZE), and pgbench
-- (4 clients, 2 CPUs) ran 1,850-1,970 statements/s inline against 2,920-3,100 calls/s of this
-- function. Every chat turn makes one such call. A message whose id is stored already is skipped;
-- a chat that is gone (deleted, expired) gets nothing and `o_count` null.
-- plan_cache_mode = force_generic_plan: without it Postgres plans the first five calls of each
-- pooled connection anyway (custom plans, before it compares them with the generic one), so a pool
-- of 20 connections planned a hundred calls per statement before keeping anything. The generic
-- plans of these statements are the custom ones (primary-key and (chat_id, seq) index scans).
-- The functions of 0021 and 0022 are declared the same way.

-- Messages as the store packs them (src/chats/store.ts, packedMessages: one jsonb array) unpacked
-- into rows in their given order (`ord`); shared by this file's function and 0022's. A plain SQL
-- function the planner inlines into the statement that calls it.
create function chat_messages_from_json(p_messages jsonb)
returns table (ord bigint, id uuid, role text, content text, tool_calls jsonb, tool_call_id text, name text)
language sql stable as $$
  select e.i, x.id, x.role, x.content, x.tool_calls, x.tool_call_id, x.name
  from jsonb_array_elements(p_messages) with ordinality as e(v, i),
       jsonb_to_record(e.v) as x(id uuid, role text, content text, tool_calls jsonb, tool_call_id text, name text)
$$;

-- A stored message as the store reads it (src/chats/store.ts, MessageRows): its columns and seq,
-- the timestamp formatted as the row parser formats timestamps (ISO, UTC, `Z`). Shared by this
-- file's function and 0022's; a plain SQL function the planner inlines.
create function chat_message_json(m chat_messages)
returns json
language sql stable as $$
  select json_build_object('id', m.id, 'chat_id', m.chat_id, 'role', m.role, 'content', m.content, 'tool_calls', m.tool_calls,
    'tool_call_id', m.tool_call_id, 'name', m.name, 'created_at', to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'seq', m.seq)
$$;

create function chat_append_messages(p_chat_id uuid, p_messages jsonb, out o_count bigint, out o_rows json)
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
  with chat as (
    select id from chats where id = p_chat_id and (expires_at is null or expires_at > now())
  ), m as (
    insert into chat_messages (id, chat_id, role, content, tool_calls, tool_call_id, name)
    select coalesce(x.id, gen_random_uuid()), chat.id, x.role, x.content, x.tool_calls, x.tool_call_id, x.name
    from chat, chat_messages_from_json(p_messages) x
    order by x.ord
    on conflict (id) do nothing
    returning chat_messages as r
  ), c as (
    update chats set last_message_at = now(), updated_at = now(), message_count = chats.message_count + (select count(*) from m)
    where chats.id = (select chat.id from chat) returning chats.message_count
  )
  select (select c.message_count from c),
         coalesce((select json_agg(chat_message_json(m.r) order by (m.r).seq) from m), '[]'::json)
  into o_count, o_rows;
end
$$;
