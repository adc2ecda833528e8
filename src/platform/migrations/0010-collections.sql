-- Files of collections (src/files/). The collection itself is a row of `resources` (kind
-- `collection`); its files and their versions live here, the bytes in the NATS object store
-- (bucket FILES) under names derived from ids (`v/<version id>`), never from user file names.
create table files (
  id uuid primary key default gen_random_uuid(),
  collection_id uuid not null references resources (id) on delete cascade,
  name text not null check (name <> '' and length(name) <= 255 and name !~ '[/\\]' and name not in ('.', '..')),
  visibility text not null default 'private' check (visibility in ('private', 'shared')),
  file_metadata jsonb not null default '{}',
  owner_id uuid references users (id) on delete set null,
  current_version integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (collection_id, name)
);

-- Every upload is a version; earlier ones are kept (and count toward max_total_size_gb).
create table file_versions (
  id uuid primary key,
  file_id uuid not null references files (id) on delete cascade,
  -- denormalised for the per-collection total and its lock-free sum
  collection_id uuid not null,
  version integer not null,
  object_name text not null unique,
  size_bytes bigint not null check (size_bytes >= 0),
  hash_sha256 text not null,
  content_type text not null,
  -- the content of text files up to FILES_TEXT_INDEX_MAX_BYTES, for search; null otherwise
  text_content text,
  uploaded_by uuid references users (id) on delete set null,
  created_at timestamptz not null default now(),
  unique (file_id, version)
);
create index file_versions_collection on file_versions (collection_id);

-- Blobs to delete from the object store. A streamed upload reserves its object name here
-- (not_before = the staging deadline) and the commit removes the row; a deleted version (file
-- delete, collection delete by cascade) adds its object through the trigger below. The sweeper
-- (src/files/sweeper.ts) deletes the objects whose time has come and then the rows.
create table file_blob_garbage (
  object_name text primary key,
  not_before timestamptz not null default now()
);

create function file_versions_collect_blob() returns trigger language plpgsql as $$
begin
  insert into file_blob_garbage (object_name) values (old.object_name)
    on conflict (object_name) do update set not_before = least(file_blob_garbage.not_before, now());
  return old;
end $$;

create trigger file_versions_collect_blob after delete on file_versions
  for each row execute function file_versions_collect_blob();
