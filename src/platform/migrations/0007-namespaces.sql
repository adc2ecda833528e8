-- Namespaces have owners (hardening): who may create in a namespace is decided by the namespace,
-- not by whoever writes first into it. A namespace is claimed by its first resource (or by
-- POST /api/v1/namespaces); its owner and the members it was granted to may create in it, and
-- wildcards in an agent's enabled_* lists only pick resources in namespaces the agent's owner uses.
create table namespaces (
  name text primary key check (name <> ''),
  owner_id uuid references users (id) on delete set null,
  created_at timestamptz not null default now()
);

create table namespace_members (
  namespace text not null references namespaces (name) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  granted_by uuid references users (id) on delete set null,
  -- The member's own agents pick the namespace through wildcards only once the member accepted
  -- (or granted it to themselves as an admin): an owner cannot push their resources into someone
  -- else's wildcards by granting them a namespace.
  accepted boolean not null default false,
  created_at timestamptz not null default now(),
  primary key (namespace, user_id)
);
create index namespace_members_user on namespace_members (user_id);

-- Existing installations: each namespace in use belongs to the owner of its oldest resource; the
-- owners of the other resources already in it become members (not accepted: nobody's wildcards
-- start picking another user's resources because of what was written before namespaces had owners).
insert into namespaces (name, owner_id, created_at)
select distinct on (namespace) namespace, owner_id, created_at
from resources where namespace <> ''
order by namespace, created_at, id;

insert into namespace_members (namespace, user_id)
select distinct r.namespace, r.owner_id
from resources r join namespaces n on n.name = r.namespace
where r.owner_id is not null and r.owner_id is distinct from n.owner_id
on conflict do nothing;

-- The default Users role gains the right to claim a namespace explicitly (roles are never
-- overwritten at start, so existing installations get it here); creating a resource needs only the
-- resource's own create permission, whose `:own` scope now means "in namespaces you own or were granted".
update roles set permissions = permissions || '{"platform.namespaces/*.create:own": true}'::jsonb
where name = 'Users';
