-- 003_placement_redirects: cross-shard claims of a routing key.
-- When a placement epoch moves a routing key (workflow id, else start
-- idempotency key) to another shard, a start placed under the new epoch
-- first writes a redirect for the key on every shard earlier epochs placed
-- it on. A start placed under an older epoch that reaches such a shard
-- finds the redirect (both take the same advisory lock on the key) and is
-- refused instead of creating a second run.
CREATE TABLE harvest_placement_redirects (
    workflow_name text NOT NULL,
    routing_key   text NOT NULL,
    epoch         bigint NOT NULL CHECK (epoch > 0),
    target_shard  integer NOT NULL CHECK (target_shard BETWEEN 0 AND 65534),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_name, routing_key)
);
CREATE INDEX harvest_placement_redirects_created ON harvest_placement_redirects (created_at);
