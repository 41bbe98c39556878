-- API bearer tokens of a node without a raft catalog (harvestd dev
-- --auth tokens). Only the SHA-256 of each token is kept, never its
-- secret; a cluster keeps its tokens in the raft catalog instead.
CREATE TABLE harvest_tokens (
    id         text PRIMARY KEY,
    name       text NOT NULL DEFAULT '',
    scope      text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    hash       text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    revoked_at timestamptz
);
