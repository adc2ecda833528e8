-- Tool results older than TOOL_RESULT_RETENTION_DAYS are swept (src/chats/tool-result-sweep.ts):
-- their content is replaced by a small marker. The row itself stays, so the assistant's tool call
-- keeps its answer (providers refuse a call without its result) and the chat's message count and
-- order are unchanged. The partial index holds only the tool results not swept yet, so a sweep
-- reads only the rows it changes; the marker is written out here twice (index and function) so
-- that the planner can match the function's condition to the index's.
create index chat_messages_tool_results_unswept on chat_messages (created_at)
  where role = 'tool' and content is distinct from '{"_expired":true,"note":"removed after TOOL_RESULT_RETENTION_DAYS"}';

-- Sweeps at most p_batch tool results older than p_days days; returns how many it swept.
create function chat_sweep_tool_results(p_days integer, p_batch integer) returns integer
language plpgsql as $$
declare
  n integer;
begin
  update chat_messages set content = '{"_expired":true,"note":"removed after TOOL_RESULT_RETENTION_DAYS"}'
   where id in (
     select id from chat_messages
      where role = 'tool' and content is distinct from '{"_expired":true,"note":"removed after TOOL_RESULT_RETENTION_DAYS"}'
        and created_at < now() - make_interval(days => p_days)
      limit p_batch);
  get diagnostics n = row_count;
  return n;
end $$;
