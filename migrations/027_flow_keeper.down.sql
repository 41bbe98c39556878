ALTER TABLE harvest_executions DROP COLUMN flow_asked;
