DROP TABLE IF EXISTS harvest_gates;
DROP TABLE IF EXISTS harvest_callbacks;
ALTER TABLE harvest_executions DROP COLUMN IF EXISTS start_at;
