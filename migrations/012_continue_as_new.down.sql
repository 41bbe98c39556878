CREATE UNIQUE INDEX harvest_signals_idempotency ON harvest_signals (execution_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
DROP INDEX harvest_signals_chain_idempotency;
ALTER TABLE harvest_signals DROP COLUMN chain_id;
DROP INDEX harvest_executions_chain;
ALTER TABLE harvest_executions DROP COLUMN continued_to,
                               DROP COLUMN continued_from,
                               DROP COLUMN chain_id;
