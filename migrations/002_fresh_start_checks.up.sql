-- 002: delayed starts, completion callbacks and admission gates.

-- When the first workflow task of a delayed start becomes due.
ALTER TABLE harvest_executions ADD COLUMN start_at timestamptz;

-- Completion callbacks of a run: POSTed (at least once) when it closes.
CREATE TABLE harvest_callbacks (
    execution_id    uuid NOT NULL REFERENCES harvest_executions (execution_id) ON DELETE CASCADE,
    idx             integer NOT NULL,
    url             text NOT NULL,
    headers         jsonb,
    -- pending: waiting for the run to close; due: to deliver; delivered; failed (gave up)
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'due', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error      text,
    delivered_at    timestamptz,
    PRIMARY KEY (execution_id, idx)
);
CREATE INDEX harvest_callbacks_due ON harvest_callbacks (next_attempt_at) WHERE status = 'due';

-- Admission gates: an open gate blocks fresh starts in its scope.
CREATE TABLE harvest_gates (
    gate_id     text PRIMARY KEY,
    scope_kind  text NOT NULL CHECK (scope_kind IN ('cluster', 'workflow_name', 'shard')),
    scope_value text NOT NULL DEFAULT '',
    reason      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz
);
