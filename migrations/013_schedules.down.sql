DROP TABLE harvest_schedule_fires;
DROP TABLE harvest_schedules;
