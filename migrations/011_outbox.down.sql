DROP TABLE harvest_children;
DROP TABLE harvest_outbox;
