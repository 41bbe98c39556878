-- 017_deferred: deferred starts (throttle, debounce, batch) whose fires
-- are exactly once.
--
-- A deferred start lives in the database of the shard its policy key
-- places on, as the ring places (workflow_name, key). The request's
-- transaction records it before the 202: a debounce or batch start joins
-- the key's open item (the one row per policy, workflow and key that is
-- still collecting, harvest_deferred_open) or opens one; a throttled start
-- is an item of its own, due at its key's next slot. The shard's owner
-- runs the fire loop: one fenced transaction closes the due items and
-- inserts, for each, an outbox row (kind deferred_start) whose keyed
-- start carries the item's key hv:deferred:<deferred id>; the outbox
-- records the run (or the refusal) back in the item.
CREATE TABLE harvest_deferred (
    deferred_id   uuid PRIMARY KEY,
    policy        text NOT NULL,
    workflow_name text NOT NULL,
    policy_key    text NOT NULL,
    -- open: a debounce or batch item still collecting starts.
    open          boolean NOT NULL,
    -- state: pending (waiting for fire_at), firing (its start is in the
    -- outbox), started (execution_id) or failed (reason).
    state         text NOT NULL DEFAULT 'pending',
    workflow_id   text NOT NULL DEFAULT '',
    -- input: the run's input (a batch's: the JSON list of the inputs).
    input         jsonb,
    starts        integer NOT NULL DEFAULT 1,
    max_size      integer NOT NULL DEFAULT 0,
    first_at      timestamptz NOT NULL,
    fire_at       timestamptz NOT NULL,
    -- deadline_at: the latest fire_at (debounce's and batch's max_wait).
    deadline_at   timestamptz NOT NULL,
    fired_at      timestamptz,
    execution_id  uuid,
    reason        text NOT NULL DEFAULT '',
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX harvest_deferred_open ON harvest_deferred (policy, workflow_name, policy_key) WHERE open;
CREATE INDEX harvest_deferred_due ON harvest_deferred (fire_at) WHERE state = 'pending';
CREATE INDEX harvest_deferred_key ON harvest_deferred (policy, workflow_name, policy_key, fire_at) WHERE state = 'pending';
CREATE INDEX harvest_deferred_done ON harvest_deferred (updated_at) WHERE state IN ('started', 'failed');

-- The pace of each throttled key: its next free slot. A throttled
-- start locks its key's row, so that slots are handed out one at a time.
CREATE TABLE harvest_deferred_throttle (
    workflow_name text NOT NULL,
    throttle_key  text NOT NULL,
    next_at       timestamptz NOT NULL,
    PRIMARY KEY (workflow_name, throttle_key)
);
