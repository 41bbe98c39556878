-- Flow control (issue 43). A start of a workflow under a concurrency limit
-- creates its run in state QUEUED; the shard's dispatcher turns it RUNNING
-- when its key has a free slot. A slot is nothing but the RUNNING state of
-- a limited run (flow_key set): the transaction that closes the run, in any
-- way, frees it, and continue-as-new hands it to the successor, so no crash
-- can leak or double one.
ALTER TABLE harvest_executions DROP CONSTRAINT harvest_executions_state_check;
ALTER TABLE harvest_executions ADD CONSTRAINT harvest_executions_state_check
    CHECK (state IN ('QUEUED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED',
                     'TIMED_OUT', 'TERMINATED', 'CONTINUED_AS_NEW'));
-- flow_key: the limit's key ('' for a limit on the workflow name alone),
-- NULL for a run under no limit. priority (1 first … 5, default 3) and
-- flow_turn order the dispatch of queued runs: a run's turn is one more
-- than the last turn of the live runs of its fairness key ('' for none),
-- so fairness keys take turns whatever their backlogs.
ALTER TABLE harvest_executions ADD COLUMN flow_key text,
    ADD COLUMN priority smallint,
    ADD COLUMN fairness_key text,
    ADD COLUMN flow_turn bigint;
-- Lean statistics, as migration 006 set for every column.
ALTER TABLE harvest_executions ALTER COLUMN flow_key SET STATISTICS 10,
    ALTER COLUMN priority SET STATISTICS 10,
    ALTER COLUMN fairness_key SET STATISTICS 10,
    ALTER COLUMN flow_turn SET STATISTICS 10;
CREATE INDEX harvest_executions_flow_held ON harvest_executions (workflow_name, flow_key)
    WHERE state = 'RUNNING' AND flow_key IS NOT NULL;
CREATE INDEX harvest_executions_flow_queued ON harvest_executions (workflow_name, flow_key, priority, flow_turn)
    WHERE state = 'QUEUED';
CREATE INDEX harvest_executions_flow_turn ON harvest_executions (workflow_name, flow_key, fairness_key, flow_turn)
    WHERE flow_key IS NOT NULL AND state IN ('QUEUED', 'RUNNING');
