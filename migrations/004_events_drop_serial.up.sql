-- 004_events_drop_serial: history rows lose their global serial number.
-- Nothing reads harvest_events.id: history is addressed by
-- (execution_id, event_id), its primary key. The column cost every
-- appended event a sequence step and a second unique index entry.
ALTER TABLE harvest_events DROP COLUMN id;
