-- Concurrency limits counted across the cluster (issue 43,
-- internal/flowkeeper). flow_asked: the run's slot is its key's keeper's,
-- not its shard's: the dispatcher asked the keeper for one (an outbox row
-- in the transaction that set it), the keeper's grant signal makes the
-- run RUNNING, and the chain's close sends the keeper a release (an
-- outbox row in the close's transaction). A continue-as-new successor
-- keeps it, as it keeps the slot.
ALTER TABLE harvest_executions ADD COLUMN flow_asked boolean NOT NULL DEFAULT false;
-- Lean statistics, as migration 006 set for every column.
ALTER TABLE harvest_executions ALTER COLUMN flow_asked SET STATISTICS 10;
