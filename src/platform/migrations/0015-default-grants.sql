-- The default Users role runs its own queries and connectors and sends its own templates (roles
-- are never overwritten at start, so existing installations get these here; new ones from
-- src/bootstrap.ts).
update roles set permissions = permissions
  || '{"platform.queries/*/*.execute:own": true, "platform.connectors/*/*.execute:own": true, "platform.templates/*/*.send:own": true}'::jsonb
where name = 'Users';
