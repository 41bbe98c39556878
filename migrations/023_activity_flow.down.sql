DROP TABLE IF EXISTS harvest_rate_buckets;
ALTER TABLE harvest_executions DROP COLUMN IF EXISTS flow_since;
DROP INDEX IF EXISTS harvest_tasks_flow_held;
ALTER TABLE harvest_tasks DROP COLUMN IF EXISTS flow_key;
