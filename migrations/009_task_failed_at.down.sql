ALTER TABLE harvest_tasks DROP COLUMN last_failed_at;
