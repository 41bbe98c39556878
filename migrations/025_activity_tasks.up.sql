-- Activity tasks (issue 43). Priority: among the tasks waiting for a
-- worker, the claim takes priority 1 first and 5 last (3 is the default),
-- oldest first within a priority. Tasks of the default priority stay in
-- the due index alone; the others also go into a small index of their own,
-- which the claim reads first, so the common case writes no extra entry.
ALTER TABLE harvest_tasks ADD COLUMN priority smallint NOT NULL DEFAULT 3;
-- Lean statistics, as migration 006 set for every column.
ALTER TABLE harvest_tasks ALTER COLUMN priority SET STATISTICS 10;
CREATE INDEX harvest_tasks_due_priority ON harvest_tasks (priority, scheduled_at)
    WHERE status = 'pending' AND priority <> 3;
-- flow_since: when a task of an activity under a concurrency limit took
-- the slot it holds (its claim from pending, by the database's clock at
-- the statement; a reclaimed attempt keeps it). The outcome's event
-- records it with the slot's key (ActivitySlot), which the fault suite
-- checks.
ALTER TABLE harvest_tasks ADD COLUMN flow_since timestamptz;
ALTER TABLE harvest_tasks ALTER COLUMN flow_since SET STATISTICS 10;
