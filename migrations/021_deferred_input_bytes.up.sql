-- The bytes of the inputs a deferred batch collected (JSON text): a start
-- that would take its key's open batch past the engine's bound closes it
-- and opens the next (engine.Config.BatchInputBytes).
ALTER TABLE harvest_deferred ADD COLUMN input_bytes bigint NOT NULL DEFAULT 0;
UPDATE harvest_deferred SET input_bytes = octet_length(input::text) WHERE open;
