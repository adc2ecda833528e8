-- A user's revoked sessions (refresh-token families) are read with the user's principal on a cache
-- miss (src/auth/principal.ts loadUserRow), so that logout revokes the session's access tokens:
-- only revoked rows are indexed, by user.
create index if not exists refresh_tokens_revoked_user_idx on refresh_tokens (user_id) where revoked_at is not null;
