DROP INDEX IF EXISTS harvest_events_update;
