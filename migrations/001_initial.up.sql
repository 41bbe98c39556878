-- 001_initial: the full per-shard schema of Harvest.
-- Every shard is one PostgreSQL database holding these tables.

-- The shard lease: exactly one row. The owner node takes it by bumping the
-- epoch; every engine write transaction re-reads the epoch FOR SHARE, so a
-- stale owner can never commit once a successor has bumped it.
CREATE TABLE harvest_shard_lease (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    shard_id    integer CHECK (shard_id BETWEEN 0 AND 65534),
    owner_node  text,
    epoch       bigint NOT NULL DEFAULT 0,
    acquired_at timestamptz,
    expires_at  timestamptz
);
INSERT INTO harvest_shard_lease (singleton) VALUES (true);

-- One row per run. holds_slot marks the run that owns the
-- (workflow_name, workflow_id) uniqueness slot; a replacing start or a
-- terminate releases it. wf_task_due_at is the pending workflow task: NULL
-- means none; the row lock on the execution serialises workflow tasks.
CREATE TABLE harvest_executions (
    execution_id     uuid PRIMARY KEY,
    workflow_name    text NOT NULL,
    workflow_id      text NOT NULL,
    state            text NOT NULL CHECK (state IN ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED',
                                                     'TIMED_OUT', 'TERMINATED', 'CONTINUED_AS_NEW')),
    holds_slot       boolean NOT NULL DEFAULT true,
    queue            text NOT NULL DEFAULT 'default',
    input            jsonb,
    output           jsonb,
    error            jsonb,
    memo             jsonb,
    idempotency_key  text,
    next_event_id    bigint NOT NULL DEFAULT 0,
    wf_task_due_at   timestamptz,
    wf_task_attempt  integer NOT NULL DEFAULT 0,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz
);
CREATE UNIQUE INDEX harvest_executions_slot ON harvest_executions (workflow_name, workflow_id) WHERE holds_slot;
CREATE INDEX harvest_executions_business_id ON harvest_executions (workflow_name, workflow_id);
CREATE INDEX harvest_executions_wf_task ON harvest_executions (wf_task_due_at) WHERE wf_task_due_at IS NOT NULL;
CREATE INDEX harvest_executions_list ON harvest_executions (created_at, execution_id);
CREATE INDEX harvest_executions_state_list ON harvest_executions (state, created_at, execution_id);

-- Append-only history. event_id is dense from 0 per execution.
CREATE TABLE harvest_events (
    id           bigserial NOT NULL UNIQUE,
    execution_id uuid NOT NULL REFERENCES harvest_executions (execution_id) ON DELETE CASCADE,
    event_id     bigint NOT NULL CHECK (event_id >= 0),
    event_type   text NOT NULL,
    data         jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (execution_id, event_id)
);

CREATE FUNCTION harvest_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('harvest.allow_event_delete', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'harvest_events is append-only (% refused)', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER harvest_events_no_update BEFORE UPDATE OR DELETE ON harvest_events
    FOR EACH ROW EXECUTE FUNCTION harvest_events_append_only();
CREATE TRIGGER harvest_events_no_truncate BEFORE TRUNCATE ON harvest_events
    FOR EACH STATEMENT EXECUTE FUNCTION harvest_events_append_only();

-- Durable activity tasks. A claim sets status=running, bumps attempt and
-- stamps the lease epoch; a completion is accepted only for the same attempt.
CREATE TABLE harvest_tasks (
    task_id           bigserial PRIMARY KEY,
    execution_id      uuid NOT NULL REFERENCES harvest_executions (execution_id) ON DELETE CASCADE,
    activity_id       text NOT NULL,
    activity_name     text NOT NULL,
    queue             text NOT NULL DEFAULT 'default',
    input             jsonb,
    idempotency_key   text NOT NULL,
    options           jsonb NOT NULL,
    status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running')),
    attempt           integer NOT NULL DEFAULT 0,
    scheduled_at      timestamptz NOT NULL DEFAULT now(),
    close_deadline    timestamptz,
    locked_until      timestamptz,
    claim_epoch       bigint,
    heartbeat_at      timestamptz,
    heartbeat_details jsonb,
    last_error        jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (execution_id, activity_id)
);
CREATE INDEX harvest_tasks_due ON harvest_tasks (scheduled_at) WHERE status = 'pending';
CREATE INDEX harvest_tasks_running ON harvest_tasks (locked_until) WHERE status = 'running';

-- Durable timers, fired by the shard owner against the database clock.
CREATE TABLE harvest_timers (
    execution_id uuid NOT NULL REFERENCES harvest_executions (execution_id) ON DELETE CASCADE,
    timer_id     text NOT NULL,
    fire_at      timestamptz NOT NULL,
    PRIMARY KEY (execution_id, timer_id)
);
CREATE INDEX harvest_timers_due ON harvest_timers (fire_at);

-- Signal ledger: one row per accepted signal. The partial unique index is the
-- signal idempotency guarantee: (execution_id, idempotency_key).
CREATE TABLE harvest_signals (
    signal_id       bigserial PRIMARY KEY,
    execution_id    uuid NOT NULL REFERENCES harvest_executions (execution_id) ON DELETE CASCADE,
    signal_name     text NOT NULL,
    idempotency_key text,
    event_id        bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX harvest_signals_idempotency ON harvest_signals (execution_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX harvest_signals_key ON harvest_signals (idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Start idempotency claims: scope (workflow_name, idempotency_key). No FK to
-- executions on purpose: a claim outlives nothing but its window, and the
-- sweeper deletes expired claims in batches.
CREATE TABLE harvest_start_idempotency (
    workflow_name   text NOT NULL,
    idempotency_key text NOT NULL,
    execution_id    uuid NOT NULL,
    shard_id        integer NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_name, idempotency_key)
);
CREATE INDEX harvest_start_idempotency_created ON harvest_start_idempotency (created_at);
