-- 012_continue_as_new: chains of runs (continue-as-new).
--
-- A run that continues as new closes CONTINUED_AS_NEW and names its
-- successor (continued_to), which names it back (continued_from), in the
-- one transaction of the workflow task that continued. chain_id is the
-- chain's first run: NULL on a first run (its chain is itself), set on
-- every successor. A run's chain is therefore coalesce(chain_id,
-- execution_id).
ALTER TABLE harvest_executions ADD COLUMN chain_id uuid,
                               ADD COLUMN continued_from uuid,
                               ADD COLUMN continued_to uuid;
ALTER TABLE harvest_executions ALTER COLUMN chain_id SET STATISTICS 10,
                               ALTER COLUMN continued_from SET STATISTICS 10,
                               ALTER COLUMN continued_to SET STATISTICS 10;
-- The chain's later runs, to find its current one (continued_to IS NULL).
CREATE INDEX harvest_executions_chain ON harvest_executions (chain_id) WHERE chain_id IS NOT NULL;

-- Signal keys are scoped to the chain, not to each run: a keyed retry to
-- any run of the chain is a duplicate. chain_id is the chain of the run the
-- signal was delivered to (NULL in rows written before this migration: the
-- run itself, which was then a first run). The chain index replaces the
-- per-execution one, which it implies.
ALTER TABLE harvest_signals ADD COLUMN chain_id uuid;
ALTER TABLE harvest_signals ALTER COLUMN chain_id SET STATISTICS 10;
CREATE UNIQUE INDEX harvest_signals_chain_idempotency ON harvest_signals ((coalesce(chain_id, execution_id)), idempotency_key)
    WHERE idempotency_key IS NOT NULL;
DROP INDEX harvest_signals_idempotency;
