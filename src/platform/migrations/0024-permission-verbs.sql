-- Rendering a template, uploading and downloading a collection's files and approving (installing)
-- a Python package have verbs of their own now: `render`, `upload`, `download`, `install`, checked
-- where `read`, `update` and `update` were before. So that nobody loses access, every role and API
-- key granting the old verb on those resources also grants the new one (same path, same scope):
--   platform.templates/….read:<s>        → platform.templates/….render:<s>
--   platform.collections/….read:<s>      → platform.collections/….download:<s>
--   platform.collections/….update:<s>    → platform.collections/….upload:<s>
--   platform.dependencies.update:all     → platform.dependencies.install:all
-- Wildcard grants (`platform.*:all`, `platform.templates/*/*.*:own`) already cover the new verbs.
-- Idempotent: only adds keys. New installations get the verbs from src/bootstrap.ts.
create function pg_temp.with_new_verbs(p jsonb) returns jsonb language sql immutable as $$
  select p || coalesce((
    select jsonb_object_agg(n, true) from (
      select regexp_replace(k, '\.read:(own|all)$', '.render:\1') as n from jsonb_object_keys(p) k
        where k ~ '^platform\.templates(/[^.:]+)*\.read:(own|all)$' and p->>k = 'true'
      union
      select regexp_replace(k, '\.read:(own|all)$', '.download:\1') from jsonb_object_keys(p) k
        where k ~ '^platform\.collections(/[^.:]+)*\.read:(own|all)$' and p->>k = 'true'
      union
      select regexp_replace(k, '\.update:(own|all)$', '.upload:\1') from jsonb_object_keys(p) k
        where k ~ '^platform\.collections(/[^.:]+)*\.update:(own|all)$' and p->>k = 'true'
      union
      select 'platform.dependencies.install:all' from jsonb_object_keys(p) k
        where k = 'platform.dependencies.update:all' and p->>k = 'true'
    ) s
  ), '{}'::jsonb)
$$;

update roles set permissions = pg_temp.with_new_verbs(permissions) where permissions <> pg_temp.with_new_verbs(permissions);
update api_keys set permissions = pg_temp.with_new_verbs(permissions) where permissions <> pg_temp.with_new_verbs(permissions);
