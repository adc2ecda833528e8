-- The default Users role runs its own queries and connectors, sends its own templates and manages
-- its own webhooks and schedules (roles are never overwritten at start, so existing installations
-- get these here; new ones from src/bootstrap.ts).
update roles set permissions = permissions
  || '{"platform.queries/*/*.execute:own": true, "platform.connectors/*/*.execute:own": true, "platform.templates/*/*.send:own": true, "platform.webhooks.create:own": true, "platform.webhooks.read:own": true, "platform.webhooks.update:own": true, "platform.webhooks.delete:own": true, "platform.schedules.create:own": true, "platform.schedules.read:own": true, "platform.schedules.update:own": true, "platform.schedules.delete:own": true}'::jsonb
where name = 'Users';
