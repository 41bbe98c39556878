-- 018_http_activities: HTTP activities registered at run time on a node
-- without a raft catalog (harvestd dev); a cluster keeps them in the
-- raft catalog instead. Header values are kept whole (the downstream
-- needs them on every attempt); the API never shows them.
CREATE TABLE harvest_http_activities (
    name       text PRIMARY KEY,
    config     jsonb NOT NULL,
    created_at timestamptz NOT NULL
);
