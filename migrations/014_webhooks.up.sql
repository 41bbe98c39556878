-- Webhook receivers of a node without a raft catalog (harvestd dev); a
-- cluster keeps them in the raft catalog instead. The secret is kept
-- whole: verifying an HMAC needs it. The API never shows it.
CREATE TABLE harvest_webhooks (
    name       text PRIMARY KEY,
    config     jsonb NOT NULL,
    created_at timestamptz NOT NULL
);
