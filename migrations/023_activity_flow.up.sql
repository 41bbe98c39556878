-- Flow control for activities (issue 43). An attempt of an activity under a
-- concurrency limit holds a slot from its claim until its outcome is
-- recorded: a slot is the 'running' status of a task whose flow_key is set
-- (the claim sets it, from the task's input; the outcome deletes the task
-- or makes it pending again). A worker that dies mid-attempt leaves its
-- task running, so the slot stays held until the attempt is reclaimed (the
-- same slot) or its outcome recorded: never more than the limit at once.
ALTER TABLE harvest_tasks ADD COLUMN flow_key text;
-- Lean statistics, as migration 006 set for every column.
ALTER TABLE harvest_tasks ALTER COLUMN flow_key SET STATISTICS 10;
CREATE INDEX harvest_tasks_flow_held ON harvest_tasks (activity_name, flow_key)
    WHERE status = 'running' AND flow_key IS NOT NULL;
-- flow_since: when a limited run took the slot it holds (its start, its
-- promotion by the dispatcher, or its hand-over by continue-as-new), by
-- the database's clock at the statement that took it; with completed_at it
-- bounds the time the run held the slot (what the fault suite checks).
ALTER TABLE harvest_executions ADD COLUMN flow_since timestamptz;
ALTER TABLE harvest_executions ALTER COLUMN flow_since SET STATISTICS 10;
-- Turns order only the runs that waited: a run that takes its slot in its
-- start has none, and the index of the turns leaves it out.
DROP INDEX harvest_executions_flow_turn;
CREATE INDEX harvest_executions_flow_turn ON harvest_executions (workflow_name, flow_key, fairness_key, flow_turn)
    WHERE flow_turn IS NOT NULL AND state IN ('QUEUED', 'RUNNING');
-- Rate limits of activities: one token bucket per activity name and key,
-- as of updated_at (it has gained rate × the time since, up to its burst).
-- The claim that starts attempts takes their tokens in its transaction.
CREATE TABLE harvest_rate_buckets (
    activity_name text NOT NULL,
    key text NOT NULL,
    tokens double precision NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (activity_name, key)
);
