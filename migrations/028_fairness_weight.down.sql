ALTER TABLE harvest_executions DROP COLUMN fairness_weight;
