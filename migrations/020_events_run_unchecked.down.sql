ALTER TABLE harvest_events ADD CONSTRAINT harvest_events_execution_id_fkey
    FOREIGN KEY (execution_id) REFERENCES harvest_executions (execution_id) ON DELETE CASCADE;
