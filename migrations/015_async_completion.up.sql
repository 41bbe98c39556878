-- Async completion (issue #30): an activity attempt that answered "I will
-- finish later" keeps its task running with async set; async_deadline is
-- its start-to-close (or schedule-to-close) bound and locked_until the
-- next timeout (the heartbeat timeout's, if sooner). The owner's sweep
-- records the timeout of an async attempt whose lock expired; the claim's
-- reclaim leaves async attempts alone.
ALTER TABLE harvest_tasks ADD COLUMN async boolean NOT NULL DEFAULT false;
ALTER TABLE harvest_tasks ADD COLUMN async_deadline timestamptz;
ALTER TABLE harvest_tasks ALTER COLUMN async SET STATISTICS 10;
ALTER TABLE harvest_tasks ALTER COLUMN async_deadline SET STATISTICS 10;
CREATE INDEX harvest_tasks_async ON harvest_tasks (locked_until) WHERE status = 'running' AND async;

-- Task tokens: the SHA-256 of each token only, bound to one attempt of
-- one activity. answer records the accepted completion or failure, so that
-- a duplicate answers the same without appending, even after the run
-- closed (the row goes with the run).
CREATE TABLE harvest_task_tokens (
    token_hash   bytea PRIMARY KEY,
    execution_id uuid NOT NULL REFERENCES harvest_executions (execution_id) ON DELETE CASCADE,
    task_id      bigint NOT NULL,
    activity_id  text NOT NULL,
    attempt      integer NOT NULL,
    answer       text CHECK (answer IN ('completed', 'failed')),
    answered_at  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX harvest_task_tokens_execution ON harvest_task_tokens (execution_id);
