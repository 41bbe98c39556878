DROP TABLE harvest_task_tokens;
DROP INDEX harvest_tasks_async;
ALTER TABLE harvest_tasks DROP COLUMN async_deadline;
ALTER TABLE harvest_tasks DROP COLUMN async;
