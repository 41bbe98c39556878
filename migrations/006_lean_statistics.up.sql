-- 006_lean_statistics: statistics of ten values for the hot tables.
--
-- Autovacuum analyses a young shard's tables every few seconds while they
-- grow (10 % of their rows changed), each time sampling 300 rows per unit
-- of statistics target: 30,000 rows at the default target of 100. In the
-- first minutes of a busy shard that was about a sixth of PostgreSQL's CPU.
-- The plans read these statistics only to choose among the tables' own
-- indexes (states, workflow names, times), for which ten most common
-- values and ten histogram buckets are plenty; the owner's own analyses
-- (engine/analyze.go) use ten already. Columns with a target of their own
-- (the jsonb payloads: 0, migration 005) keep it.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT a.attrelid::regclass AS tbl, a.attname
          FROM pg_attribute a
         WHERE a.attrelid IN ('harvest_executions'::regclass, 'harvest_events'::regclass,
                              'harvest_tasks'::regclass, 'harvest_start_idempotency'::regclass,
                              'harvest_signals'::regclass, 'harvest_timers'::regclass,
                              'harvest_callbacks'::regclass)
           AND a.attnum > 0 AND NOT a.attisdropped
           AND coalesce(a.attstattarget, -1) < 0
         ORDER BY 1, a.attnum
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS 10', c.tbl, c.attname);
    END LOOP;
END
$$;
