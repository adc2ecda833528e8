-- GET /executions lists one function's (or agent's) executions newest first: without this index an
-- admin's list of one function reads the table in created_at order until it has a page.
create index executions_function_idx on executions (namespace, name, created_at desc);
