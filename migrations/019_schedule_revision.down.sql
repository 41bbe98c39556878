ALTER TABLE harvest_schedules DROP COLUMN catalog_revision;
