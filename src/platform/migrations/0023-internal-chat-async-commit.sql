-- An internal chat (the adapter's, one per agent request; a sub-agent's hidden chat) is created
-- with an asynchronous commit: no WAL flush of its own on the request's path. It is made durable
-- by its turn's write, which commits synchronously before anyone is answered and so flushes the
-- WAL up to its own record, this chat's insert included. Lost with a Postgres crash before that
-- write is only a chat nobody was answered from (internal chats are never listed or resumed).
-- Same signature and body as 0022's otherwise.
create or replace function chat_create_with_messages(p_user_id uuid, p_agent_id uuid, p_agent_namespace text, p_agent_name text, p_title text,
  p_input jsonb, p_expires_at timestamptz, p_session_key text, p_internal boolean, p_messages jsonb)
returns setof chats
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
  -- local to the statement's transaction: its commit is the one that does not wait for the flush
  if p_internal then
    perform set_config('synchronous_commit', 'off', true);
  end if;
  return query
  with c as (
    insert into chats (user_id, agent_id, agent_namespace, agent_name, title, input, expires_at, session_key, internal, last_message_at, message_count)
    values (p_user_id, p_agent_id, p_agent_namespace, p_agent_name, p_title, p_input, p_expires_at, p_session_key, p_internal, now(), jsonb_array_length(p_messages))
    returning *
  ), m as (
    insert into chat_messages (id, chat_id, role, content, tool_calls, tool_call_id, name)
    select coalesce(x.id, gen_random_uuid()), c.id, x.role, x.content, x.tool_calls, x.tool_call_id, x.name
    from c, chat_messages_from_json(p_messages) x
    order by x.ord
  )
  select * from c;
end
$$;
