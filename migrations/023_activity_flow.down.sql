DROP TABLE IF EXISTS harvest_rate_buckets;
DROP INDEX IF EXISTS harvest_tasks_flow_held;
ALTER TABLE harvest_tasks DROP COLUMN IF EXISTS flow_key;
