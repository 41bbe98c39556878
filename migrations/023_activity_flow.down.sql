DROP TABLE IF EXISTS harvest_rate_buckets;
ALTER TABLE harvest_executions DROP COLUMN IF EXISTS flow_since;
DROP INDEX IF EXISTS harvest_executions_flow_turn;
CREATE INDEX harvest_executions_flow_turn ON harvest_executions (workflow_name, flow_key, fairness_key, flow_turn)
    WHERE flow_key IS NOT NULL AND state IN ('QUEUED', 'RUNNING');
DROP INDEX IF EXISTS harvest_tasks_flow_held;
ALTER TABLE harvest_tasks DROP COLUMN IF EXISTS flow_key;
