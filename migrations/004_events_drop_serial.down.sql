ALTER TABLE harvest_events ADD COLUMN id bigserial NOT NULL UNIQUE;
