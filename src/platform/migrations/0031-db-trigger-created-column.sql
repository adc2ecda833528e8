-- A database trigger's optional "created" column (src/db-triggers/operations.ts): a column the row
-- takes once, at INSERT, with the same value as the poll column (e.g. created_at beside an
-- updated_at poll column, both `default now()`). A row whose two values are equal was inserted,
-- otherwise updated, which lets a trigger deliver INSERT and UPDATE apart.
alter table db_triggers add column created_column text;
