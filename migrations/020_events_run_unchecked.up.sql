-- The history's reference to its run is kept by the engine, not checked
-- per row: an event is appended only by a transaction that created its run
-- or holds it (fenced, in event order), and runs are never deleted, so the
-- foreign key's ON DELETE CASCADE never ran while its check cost one
-- trigger and one key-share lookup per appended event (6 % of PostgreSQL's
-- statement time under keyed starts; docs/performance.md).
ALTER TABLE harvest_events DROP CONSTRAINT harvest_events_execution_id_fkey;
