-- Declarative config and packages (src/gitops/) carry webhooks, schedules, database triggers,
-- roles, users and dependencies as well as resources: each row says who manages it (`config`,
-- `pkg:<name>`, or null for one made through the API, by hand) and the checksum of the config body
-- it was last written from (compared with the desired body's: equal means unchanged). Editing a
-- row through its API clears both (detach-on-edit): a package uninstall then leaves it.
alter table webhooks add column managed_by text, add column checksum text;
alter table schedules add column managed_by text, add column checksum text;
alter table db_triggers add column managed_by text, add column checksum text;
alter table roles add column managed_by text, add column checksum text;
alter table users add column managed_by text, add column checksum text;
alter table dependencies add column managed_by text, add column checksum text;

-- A schedule's and a database trigger's name is unique per owner; one that config or a package
-- manages is addressed by its name alone (a config file names no owner), so it is unique among
-- the managed ones.
create unique index schedules_managed_name on schedules (name) where managed_by is not null;
create unique index db_triggers_managed_name on db_triggers (name) where managed_by is not null;

create index webhooks_managed_by on webhooks (managed_by) where managed_by is not null;
create index schedules_managed_by on schedules (managed_by) where managed_by is not null;
create index db_triggers_managed_by on db_triggers (managed_by) where managed_by is not null;
create index roles_managed_by on roles (managed_by) where managed_by is not null;
create index users_managed_by on users (managed_by) where managed_by is not null;
create index dependencies_managed_by on dependencies (managed_by) where managed_by is not null;
