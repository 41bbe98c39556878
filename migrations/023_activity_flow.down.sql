DROP INDEX IF EXISTS harvest_tasks_flow_held;
ALTER TABLE harvest_tasks DROP COLUMN IF EXISTS flow_key;
