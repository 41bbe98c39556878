ALTER TABLE harvest_events ALTER COLUMN data SET STATISTICS -1;
ALTER TABLE harvest_executions ALTER COLUMN input SET STATISTICS -1,
                               ALTER COLUMN output SET STATISTICS -1,
                               ALTER COLUMN error SET STATISTICS -1,
                               ALTER COLUMN memo SET STATISTICS -1;
ALTER TABLE harvest_executions RESET (fillfactor);
