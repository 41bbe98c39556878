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
           AND a.attstattarget = 10
         ORDER BY 1, a.attnum
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS -1', c.tbl, c.attname);
    END LOOP;
END
$$;
