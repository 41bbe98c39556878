ALTER TABLE harvest_tasks DROP COLUMN cancel_requested;
