DROP INDEX IF EXISTS harvest_executions_flow_turn;
DROP INDEX IF EXISTS harvest_executions_flow_queued;
DROP INDEX IF EXISTS harvest_executions_flow_held;
ALTER TABLE harvest_executions DROP COLUMN IF EXISTS flow_turn,
    DROP COLUMN IF EXISTS fairness_key,
    DROP COLUMN IF EXISTS priority,
    DROP COLUMN IF EXISTS flow_key;
UPDATE harvest_executions SET state = 'RUNNING', wf_task_due_at = now() WHERE state = 'QUEUED';
ALTER TABLE harvest_executions DROP CONSTRAINT harvest_executions_state_check;
ALTER TABLE harvest_executions ADD CONSTRAINT harvest_executions_state_check
    CHECK (state IN ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED',
                     'TIMED_OUT', 'TERMINATED', 'CONTINUED_AS_NEW'));
