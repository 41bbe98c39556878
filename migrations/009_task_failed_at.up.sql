-- 009_task_failed_at: when an activity task's last attempt failed, in
-- workflow time (engine/clock.go). A retry is due exactly its backoff
-- after it (scheduled_at = last_failed_at + backoff), and describe shows
-- both. The column gets the hot tables' statistics target (migration 006).
ALTER TABLE harvest_tasks ADD COLUMN last_failed_at timestamptz;
ALTER TABLE harvest_tasks ALTER COLUMN last_failed_at SET STATISTICS 10;
