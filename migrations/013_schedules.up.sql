-- 013_schedules: schedules whose fires are exactly once.
--
-- A schedule's definition (spec), its generation and its cursor live in
-- the database of the shard that fires it (step one: the raft catalog is
-- to hold the definitions later, see docs/schedules.md). The shard's
-- owner runs the fire loop: one fenced transaction locks the schedule's
-- row, advances cursor_at (the last nominal time fired or passed) and
-- inserts, for each fire, a harvest_schedule_fires row and an outbox row
-- (kind schedule_start) whose keyed start carries the fire's key
-- hv:sched:<schedule id>:<generation>:<nominal time UTC>. A deleted
-- schedule keeps its row as a tombstone (deleted_at) so that creating it
-- again bumps the generation: its new fires never meet the old keys.
CREATE TABLE harvest_schedules (
    schedule_id text PRIMARY KEY,
    generation  bigint NOT NULL DEFAULT 1,
    spec        jsonb NOT NULL,
    paused      boolean NOT NULL DEFAULT false,
    cursor_at   timestamptz NOT NULL,
    next_at     timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE INDEX harvest_schedules_due ON harvest_schedules (next_at) WHERE deleted_at IS NULL AND NOT paused;

-- The recent fires of each schedule: started (with its run), skipped or
-- failed (with the reason), or pending while its outbox row retries.
CREATE TABLE harvest_schedule_fires (
    fire_key     text PRIMARY KEY,
    schedule_id  text NOT NULL,
    generation   bigint NOT NULL,
    nominal_at   timestamptz NOT NULL,
    outcome      text NOT NULL,
    reason       text NOT NULL DEFAULT '',
    triggered    boolean NOT NULL DEFAULT false,
    workflow_id  text NOT NULL DEFAULT '',
    execution_id uuid,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX harvest_schedule_fires_recent ON harvest_schedule_fires (schedule_id, generation, nominal_at DESC);
