-- How many messages a chat holds, moved on in the statement that inserts them. A worker keeps the
-- history of the chats whose turns it ran (src/chats/history-cache.ts) and reads only what was added
-- since; this count tells it whether what it holds plus what it read is the whole history (a message
-- committed out of `seq` order, or one deleted, makes the sums differ: the worker reads it all).
alter table chats add column message_count bigint not null default 0;
update chats c set message_count = (select count(*) from chat_messages m where m.chat_id = c.id);
