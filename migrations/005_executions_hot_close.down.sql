ALTER TABLE harvest_executions RESET (fillfactor);
CREATE INDEX harvest_executions_state_list ON harvest_executions (state, created_at, execution_id);
