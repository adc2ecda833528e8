-- Component view tickets are sealed (AES-256-GCM, src/components/store.ts) and checked when used,
-- so nothing is stored for them any more; migration 0014's table goes.
drop table if exists component_view_tickets;
