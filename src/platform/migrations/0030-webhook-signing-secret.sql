-- A webhook's optional signing secret (src/webhooks/signature.ts): AES-256-GCM ciphertext from the
-- secret box, bound to ('webhook', id, 'signing_secret'); null = calls are not signed.
alter table webhooks add column signing_secret text;
