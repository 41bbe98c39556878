ALTER TABLE harvest_tasks DROP COLUMN flow_since;
DROP INDEX harvest_tasks_due_priority;
ALTER TABLE harvest_tasks DROP COLUMN priority;
