package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// TestOutboxKindsTable checks that every kind the engine inserts has an
// entry, and that an unknown kind is refused for good, recording nothing.
func TestOutboxKindsTable(t *testing.T) {
	for _, name := range []string{outboxSignal, outboxStartChild, outboxChildDone, outboxCloseChild,
		outboxScheduleStart, outboxDeferredStart} {
		require.Contains(t, outboxKinds, name)
	}
	require.Len(t, outboxKinds, 6)

	r := store.OutboxRow{ID: 7, Kind: "nope"}
	a := outboxKindOf(r.Kind).perform(context.Background(), &Engine{}, r)
	require.ErrorIs(t, a.answer, ErrInvalidArgument)
	require.NoError(t, a.retry)
	require.Nil(t, a.outcome)
	b := &pgx.Batch{}
	require.NoError(t, outboxKindOf(r.Kind).record(b, nil, a))
	require.Zero(t, b.Len())
}

// startOutbound is an Outbound whose keyed starts answer err and note
// their requests; it performs nothing else.
type startOutbound struct {
	Outbound
	err  error
	reqs []StartRequest
}

func (o *startOutbound) Start(_ context.Context, req StartRequest) (StartResult, error) {
	o.reqs = append(o.reqs, req)
	return StartResult{ExecutionID: uuid.New()}, o.err
}

// TestOutboxKeyedStartRefusals checks each keyed-start kind's policy: which
// refusals end a fire (and how) and which are retried, and the start it
// fires.
func TestOutboxKeyedStartRefusals(t *testing.T) {
	gate, conflict := &GateError{GateID: "g"}, &ConflictError{ExistingExecutionID: "x"}
	schema, transient := &harvest.InputError{Workflow: "w"}, errors.New("unreachable")
	cases := []struct {
		kind    string
		request string
		err     error
		outcome string // "" for a retry
	}{
		{outboxScheduleStart, `{"overlap":"skip"}`, nil, fireStarted},
		{outboxScheduleStart, `{"overlap":"skip"}`, gate, fireSkipped},
		{outboxScheduleStart, `{"overlap":"skip"}`, conflict, fireSkipped},
		{outboxScheduleStart, `{"overlap":"buffer_one"}`, gate, ""},
		{outboxScheduleStart, `{"overlap":"buffer_one"}`, conflict, ""},
		{outboxScheduleStart, `{"overlap":"allow_all"}`, conflict, fireFailed},
		{outboxScheduleStart, `{"overlap":"skip"}`, schema, ""},
		{outboxScheduleStart, `{"overlap":"skip"}`, transient, ""},
		{outboxScheduleStart, `not json`, nil, fireFailed},
		{outboxDeferredStart, `{"input":null}`, nil, DeferredStarted},
		{outboxDeferredStart, `{}`, gate, ""},
		{outboxDeferredStart, `{}`, conflict, DeferredFailed},
		{outboxDeferredStart, `{}`, schema, DeferredFailed},
		{outboxDeferredStart, `{}`, transient, ""},
		{outboxDeferredStart, `not json`, nil, DeferredFailed},
	}
	for _, c := range cases {
		o := &startOutbound{err: c.err}
		r := store.OutboxRow{ID: 1, Kind: c.kind, CommandID: "key", Request: []byte(c.request)}
		a := outboxKindOf(c.kind).perform(context.Background(), &Engine{cfg: Config{Outbound: o}}, r)
		if c.outcome == "" {
			require.Equal(t, c.err, a.retry, "%s %s %v", c.kind, c.request, c.err)
			require.Nil(t, a.fire)
			continue
		}
		require.NoError(t, a.retry, "%s %s %v", c.kind, c.request, c.err)
		require.Equal(t, c.outcome, a.fire.outcome, "%s %s %v", c.kind, c.request, c.err)
		for _, req := range o.reqs {
			require.Equal(t, "key", req.IdempotencyKey)
			require.Nil(t, req.Input)
		}
	}
}

// TestOutboxKeyedStartRequests checks the start each keyed-start kind fires.
func TestOutboxKeyedStartRequests(t *testing.T) {
	o := &startOutbound{}
	e := &Engine{cfg: Config{Outbound: o}}
	r := store.OutboxRow{Kind: outboxScheduleStart, CommandID: "fire", Request: []byte(`{"workflow_name":"w","workflow_id":"id"}`)}
	outboxKindOf(r.Kind).perform(context.Background(), e, r)
	r = store.OutboxRow{Kind: outboxDeferredStart, CommandID: "item", Request: []byte(`{"workflow_name":"w","workflow_id":"id"}`)}
	outboxKindOf(r.Kind).perform(context.Background(), e, r)
	require.Equal(t, []StartRequest{
		{WorkflowName: "w", WorkflowID: "id", IdempotencyKey: "fire", ReusePolicy: ReuseTerminateIfRunning, ConflictPolicy: ConflictFail},
		{WorkflowName: "w", WorkflowID: "id", IdempotencyKey: "item"},
	}, o.reqs)
}

// TestOutboxKeyedStartRecords checks that a fire's answer is one UPDATE of its
// kind's table, and that no answer (or a deferred key naming no item)
// records nothing.
func TestOutboxKeyedStartRecords(t *testing.T) {
	fire := &fireAnswer{outcome: fireStarted, executionID: uuid.NewString()}
	cases := []struct {
		kind, key string
		fire      *fireAnswer
		want      int
	}{
		{outboxScheduleStart, "fire", fire, 1},
		{outboxScheduleStart, "fire", nil, 0},
		{outboxDeferredStart, DeferredKey(uuid.New()), fire, 1},
		{outboxDeferredStart, DeferredKey(uuid.New()), nil, 0},
		{outboxDeferredStart, "hv:deferred:not-a-uuid", fire, 0},
	}
	for _, c := range cases {
		b := &pgx.Batch{}
		a := outboxAnswer{row: store.OutboxRow{Kind: c.kind, CommandID: c.key}, fire: c.fire}
		require.NoError(t, outboxKindOf(c.kind).record(b, nil, a))
		require.Equal(t, c.want, b.Len(), "%s %s", c.kind, c.key)
	}
}
