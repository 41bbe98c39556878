DROP FUNCTION IF EXISTS harvest_flow_use(int, text[], text[], bigint[], bigint[]);
DROP INDEX harvest_executions_flow_turn;
CREATE INDEX harvest_executions_flow_turn ON harvest_executions (workflow_name, flow_key, fairness_key, flow_turn)
    WHERE flow_key IS NOT NULL AND state IN ('QUEUED', 'RUNNING');
