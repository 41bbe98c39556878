DROP TABLE IF EXISTS harvest_start_idempotency;
DROP TABLE IF EXISTS harvest_signals;
DROP TABLE IF EXISTS harvest_timers;
DROP TABLE IF EXISTS harvest_tasks;
DROP TABLE IF EXISTS harvest_events;
DROP FUNCTION IF EXISTS harvest_events_append_only();
DROP TABLE IF EXISTS harvest_executions;
DROP TABLE IF EXISTS harvest_shard_lease;
