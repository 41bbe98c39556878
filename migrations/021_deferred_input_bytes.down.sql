ALTER TABLE harvest_deferred DROP COLUMN input_bytes;
