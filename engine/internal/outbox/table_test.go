package outbox

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// TestOutboxCommandsTable checks that every command kind has an entry, and that
// an unknown kind is refused for good, recording nothing.
func TestOutboxCommandsTable(t *testing.T) {
	kinds := Commands()
	for _, name := range []string{Signal, StartChild, ChildDone, CloseChild} {
		require.Contains(t, kinds, name)
	}
	require.Len(t, kinds, 4)

	r := store.OutboxRow{ID: 7, Kind: "nope"}
	a := kinds.Of(r.Kind).Perform(context.Background(), Deps{}, r)
	require.ErrorIs(t, a.answer, shardapi.ErrInvalidArgument)
	require.NoError(t, a.retry)
	require.Nil(t, a.outcome)
	b := &pgx.Batch{}
	require.NoError(t, kinds.Of(r.Kind).Record(b, nil, a))
	require.Zero(t, b.Len())
}

// startOutbound is an Outbound whose keyed starts answer err and note
// their requests; it performs nothing else.
type startOutbound struct {
	Outbound
	err  error
	reqs []shardapi.OutboundStart
}

func (o *startOutbound) Start(_ context.Context, req shardapi.OutboundStart) (shardapi.StartResult, error) {
	o.reqs = append(o.reqs, req)
	return shardapi.StartResult{ExecutionID: uuid.New()}, o.err
}

// testRequest is the request of testKind's rows.
type testRequest struct {
	Name  string `json:"name"`
	Final bool   `json:"final"`
}

// testKind is a keyed start whose refusals are final when its request
// says so; it records the outcome as the batch's statement.
var testKind = KeyedStart[testRequest]{
	Start: func(d testRequest) shardapi.OutboundStart { return shardapi.OutboundStart{WorkflowName: d.Name} },
	Refused: func(d testRequest, err error) (string, string, bool) {
		return "refused", err.Error(), d.Final
	},
	Queue: func(b *pgx.Batch, key, outcome, reason, executionID string) {
		b.Queue(key+" "+outcome+" "+reason, executionID)
	},
	Started: "started", Failed: "failed",
}

// TestOutboxKeyedStart checks the keyed start of a row (its key is the row's
// command id), how its answers are sorted (started, undecodable,
// refused for good, retried), and what each records.
func TestOutboxKeyedStart(t *testing.T) {
	refusal := errors.New("no")
	cases := []struct {
		request string
		err     error
		outcome string // "" for a retry
	}{
		{`{"name":"w"}`, nil, "started"},
		{`not json`, nil, "failed"},
		{`{"name":"w","final":true}`, refusal, "refused"},
		{`{"name":"w"}`, refusal, ""},
	}
	for _, c := range cases {
		o := &startOutbound{err: c.err}
		r := store.OutboxRow{ID: 1, Kind: "test", CommandID: "key", Request: []byte(c.request)}
		a := testKind.Perform(context.Background(), Deps{Outbound: o}, r)
		b := &pgx.Batch{}
		require.NoError(t, testKind.Record(b, nil, a))
		if c.outcome == "" {
			require.Equal(t, c.err, a.retry, c.request)
			require.Nil(t, a.fire)
			require.Zero(t, b.Len(), "a retry records nothing")
			continue
		}
		require.NoError(t, a.retry, c.request)
		require.Equal(t, c.outcome, a.fire.outcome, c.request)
		require.Equal(t, 1, b.Len(), "one record of %s", c.request)
		for _, req := range o.reqs {
			require.Equal(t, shardapi.OutboundStart{WorkflowName: "w", IdempotencyKey: "key"}, req)
		}
	}
}
