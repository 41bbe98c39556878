DROP TABLE harvest_deferred_throttle;
DROP TABLE harvest_deferred;
