-- File names are kept in Unicode NFC from now on (src/files/store.ts `nfc`): `café.txt` in NFD
-- (e + combining accent, as macOS types it) and in NFC is one file. Names stored before in another
-- form are normalised here. Where a collection already holds the NFC spelling (two look-alike
-- files uploaded before), the other keeps its old name: it stays listed, and lookups by name reach
-- the NFC one. normalize() needs a UTF8 database; any other encoding is left as it is.
do $$
begin
  if current_setting('server_encoding') = 'UTF8' then
    with candidates as (
      select distinct on (collection_id, normalize(name, NFC)) id, collection_id, normalize(name, NFC) as nfc_name
      from files
      where name is not nfc normalized
      order by collection_id, normalize(name, NFC), created_at
    )
    update files f set name = c.nfc_name
    from candidates c
    where f.id = c.id
      and not exists (select 1 from files g where g.collection_id = c.collection_id and g.name = c.nfc_name);
  end if;
end
$$;
