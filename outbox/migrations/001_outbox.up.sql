-- The application's outbox (package outbox): one row per keyed start or
-- signal the application wrote inside its own transaction, delivered once
-- by a Relay.
CREATE TABLE IF NOT EXISTS harvest_app_outbox (
    id               bigserial PRIMARY KEY,
    kind             text NOT NULL CHECK (kind IN ('start', 'signal')),
    workflow_name    text NOT NULL DEFAULT '',
    execution_id     text NOT NULL DEFAULT '',
    idempotency_key  text NOT NULL CHECK (idempotency_key <> ''),
    workflow_id      text NOT NULL DEFAULT '',
    signal_name      text NOT NULL DEFAULT '',
    payload          jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text,
    delivered_at     timestamptz,
    failed_at        timestamptz,
    result_execution_id text,
    UNIQUE (kind, workflow_name, execution_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS harvest_app_outbox_due ON harvest_app_outbox (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
