-- 024_flow_limits: flow control limits set at run time on a node without
-- a raft catalog (harvestd dev); a cluster keeps them in the raft
-- catalog instead. One row per workflow or activity name, the limit
-- (flowlimit.Limit) as JSON.
CREATE TABLE harvest_flow_limits (
    kind       text NOT NULL CHECK (kind IN ('workflow', 'activity')),
    name       text NOT NULL,
    config     jsonb NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (kind, name)
);
