-- The other statements of an adapter agent request (src/chats/store.ts), as functions for the
-- reason 0020 gives (Postgres keeps their plans per session instead of planning them per call):
--   chat_create_with_messages  a new chat and its earlier messages in one statement (the adapter's
--                              internal chat of every agent request)
--   chat_turn_context          the chat, its message count and its last p_limit messages after
--                              p_after (oldest first), what a turn reads when its worker holds nothing
create function chat_create_with_messages(p_user_id uuid, p_agent_id uuid, p_agent_namespace text, p_agent_name text, p_title text,
  p_input jsonb, p_expires_at timestamptz, p_session_key text, p_internal boolean, p_messages jsonb)
returns setof chats
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
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

create function chat_turn_context(p_id uuid, p_limit integer, p_after bigint)
returns table (id uuid, user_id uuid, agent_id uuid, agent_namespace text, agent_name text, title text, input jsonb, archived boolean,
  session_key text, expires_at timestamptz, active_channel_id text, internal boolean, created_at timestamptz, updated_at timestamptz,
  last_message_at timestamptz, message_count bigint, history json)
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
  return query
  select c.id, c.user_id, c.agent_id, c.agent_namespace, c.agent_name, c.title, c.input, c.archived, c.session_key, c.expires_at,
         c.active_channel_id, c.internal, c.created_at, c.updated_at, c.last_message_at, c.message_count,
         coalesce((
           select json_agg(chat_message_json(m.r) order by (m.r).seq)
           from (select cm as r from chat_messages cm where cm.chat_id = c.id and cm.seq > p_after order by cm.seq desc limit p_limit) m
         ), '[]'::json)
  from chats c where c.id = p_id and (c.expires_at is null or c.expires_at > now());
end
$$;
