-- 005_executions_hot_close: closing a run updates no index.
-- A run's row is inserted once and updated when it appends history or
-- closes. An update that changes no indexed column and finds room on its
-- page is a HOT update: PostgreSQL writes no index entry for it. The
-- state index made every close a full update of all five indexes; it
-- goes, and state-filtered listing walks harvest_executions_list (newest
-- first) with a filter instead. fillfactor 80 leaves each page room for
-- its rows' next versions; it applies to pages written from now on.
DROP INDEX harvest_executions_state_list;
ALTER TABLE harvest_executions SET (fillfactor = 80);
