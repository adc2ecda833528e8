-- Remote MCP servers (src/mcp-servers/) are a new resource kind with a verb of its own, `use`.
-- New installations give the default Users role its own-scope grants from src/bootstrap.ts; here
-- an existing Users role gets the same (create/read/update/delete/use on its members' own
-- servers), so Users can register and use MCP servers as they can connectors. Other roles are an
-- administrator's choice and are left alone; wildcard grants (`platform.*:all`) already cover it.
-- Idempotent: only adds keys.
update roles
   set permissions = permissions || jsonb_build_object(
     'platform.mcp-servers/*/*.create:own', true,
     'platform.mcp-servers/*/*.read:own', true,
     'platform.mcp-servers/*/*.update:own', true,
     'platform.mcp-servers/*/*.delete:own', true,
     'platform.mcp-servers/*/*.use:own', true)
 where name = 'Users';
