-- 005_room_and_statistics: room for updated runs, no statistics on payloads.
--
-- A run's row is updated each time it appends history. An update that
-- changes no indexed column and finds room on its page is a HOT update:
-- PostgreSQL writes no index entry for it. Appends of eager workflow tasks
-- (inside a start or an activity-completion batch) change no indexed
-- column; closes (state) and the workflow loop's wakes and clears
-- (wf_task_due_at) do. fillfactor 80 leaves each page room for its rows'
-- next versions; it applies to pages written from now on.
ALTER TABLE harvest_executions SET (fillfactor = 80);

-- No plan reads statistics of the jsonb payloads, and computing them was
-- most of the cost of analysing these tables (a quarter of a second for a
-- 45,000-event history). ANALYZE skips a column whose target is 0.
ALTER TABLE harvest_executions ALTER COLUMN input SET STATISTICS 0,
                               ALTER COLUMN output SET STATISTICS 0,
                               ALTER COLUMN error SET STATISTICS 0,
                               ALTER COLUMN memo SET STATISTICS 0;
ALTER TABLE harvest_events ALTER COLUMN data SET STATISTICS 0;
