-- 010_activity_cancel: the workflow cancelled the activity (an
-- ActivityCancelRequested command, written in the same transaction). A
-- running attempt learns of it through its heartbeat; a reclaimed one is
-- not started again, and a failed one is not retried. The column gets the
-- hot tables' statistics target (migration 006).
ALTER TABLE harvest_tasks ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
ALTER TABLE harvest_tasks ALTER COLUMN cancel_requested SET STATISTICS 10;
