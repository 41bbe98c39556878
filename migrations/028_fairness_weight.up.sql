-- A queued run's fairness weight (issue 43), for a limit counted across
-- the cluster: its key's keeper orders the waiters by fairness turns as a
-- shard does, and the acquire the dispatcher sends it carries the weight
-- the start gave (a shard's own turns are taken at the insert and need no
-- column). NULL is weight 1, the default, so most rows keep none.
ALTER TABLE harvest_executions ADD COLUMN fairness_weight smallint;
-- Lean statistics, as migration 006 set for every column.
ALTER TABLE harvest_executions ALTER COLUMN fairness_weight SET STATISTICS 10;
