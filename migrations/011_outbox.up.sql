-- 011_outbox: the durable outbox of commands that act on other runs
-- (signals to other workflows, child starts, a child's close reported to
-- its parent, parent close policies). A row is inserted by the
-- transaction that records its cause (the workflow task's command event,
-- or the run's close), so the intent is durable before anything is sent.
-- The outbox loop claims due rows (due_at moves ahead by the claim's
-- lease, so a crash retries after it; a row claimed under an older lease
-- epoch is taken again at once by the new owner), performs the keyed start or keyed
-- signal through the normal routing, and in one fenced transaction
-- records the outcome in the source run and deletes the row.
CREATE TABLE harvest_outbox (
    outbox_id    bigserial PRIMARY KEY,
    execution_id uuid NOT NULL,
    command_id   text NOT NULL,
    kind         text NOT NULL,
    request      jsonb NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    claim_epoch  bigint NOT NULL DEFAULT 0,
    due_at       timestamptz NOT NULL DEFAULT now(),
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (execution_id, kind, command_id)
);
CREATE INDEX harvest_outbox_due ON harvest_outbox (due_at);

-- The children a run started (ChildWorkflowInitiated), for describe and
-- the parent close policy. child_execution_id is set once the keyed start
-- answered; start_error when it refused the start.
CREATE TABLE harvest_children (
    parent_execution_id uuid NOT NULL REFERENCES harvest_executions (execution_id) ON DELETE CASCADE,
    command_id          text NOT NULL,
    workflow_name       text NOT NULL,
    workflow_id         text NOT NULL,
    close_policy        text NOT NULL,
    child_execution_id  uuid,
    start_error         text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (parent_execution_id, command_id)
);
