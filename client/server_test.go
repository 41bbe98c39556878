package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/internal/testworkflows"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// serverBundle is a real node: engine and API on their own database.
type serverBundle struct {
	engine *engine.Engine
	api    *client.Client
	url    string // base URL of the node
}

func setupServer(t testing.TB) *serverBundle {
	t.Helper()
	return setupServerWith(t, func(e *engine.Engine) api.Config { return api.Config{Gates: e} })
}

// setupServerWith is setupServer with the API configured by config, which
// sees the engine.
func setupServerWith(t testing.TB, config func(*engine.Engine) api.Config) *serverBundle {
	t.Helper()
	return setupServerEngine(t, config, func(*engine.Config) {})
}

// setupServerEngine is setupServerWith with the engine's configuration
// adjusted by mutate.
func setupServerEngine(t testing.TB, config func(*engine.Engine) api.Config, mutate func(*engine.Config)) *serverBundle {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(demo.NewServices()).Register(reg))
	require.NoError(t, reg.Register(approvalWF, testworkflows.QueryCounter, testworkflows.Tally, pendingActivity, pendingWF))
	pool := pgtest.NewPool(t)
	cfg := engine.Config{ShardID: 0, NodeID: "t", PollInterval: 20 * time.Millisecond, Logger: zerolog.Nop()}
	mutate(&cfg)
	e, err := engine.New(pool, reg, cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(e.Stop)
	srv, err := api.New(config(e), api.SingleShard(e))
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &serverBundle{engine: e, api: client.New(hs.URL), url: hs.URL}
}

// approvalWF declares its one signal, demo.Approved, and returns who
// approved.
var approvalWF = harvest.NewWorkflow("approval", func(ctx harvest.Context, _ json.RawMessage) (string, error) {
	a, err := demo.Approved.Receive(ctx)
	return a.By, err
}).WithSignals(demo.Approved)

// waitingOrder is an order that waits an hour for its approval.
var waitingOrder = json.RawMessage(`{"order_id":"o-1","amount_cents":100,"customer_id":"c-1"}`)

func TestServerStartFields(t *testing.T) {
	t.Parallel()

	t.Run("UnkeyedStartOmitsStartedFreshAndDeduplicated", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		res, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{Input: waitingOrder})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.Status)
		require.Nil(t, res.StartedFresh, "raw: %s", res.Raw)
		require.Nil(t, res.Deduplicated, "raw: %s", res.Raw)
		require.Equal(t, "RUNNING", res.State)
		require.NotEmpty(t, res.WorkflowID, "the server mints a workflow id")
	})

	t.Run("KeyedStartTwice", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		req := client.StartRequest{Input: waitingOrder, IdempotencyKey: "evt-1"}
		first, err := b.api.Start(ctxT(t), demo.OrderName, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, first.Status)
		require.Equal(t, ptr(true), first.StartedFresh)
		require.Equal(t, ptr(false), first.Deduplicated)

		req.Input = json.RawMessage(`{"different":"body"}`)
		again, err := b.api.Start(ctxT(t), demo.OrderName, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, again.Status)
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.Equal(t, ptr(false), again.StartedFresh)
		require.Equal(t, ptr(true), again.Deduplicated)
	})

	t.Run("FlowFieldsQueueAndShow", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		req := client.StartRequest{Input: map[string]any{"customer": "ignored", "sleep_ms": 3_600_000}, ConcurrencyKey: "k1",
			Priority: 1, FairnessKey: "tenant", FairnessWeight: 2}
		for i := range demo.ReportMaxRunning + 1 {
			res, err := b.api.Start(ctxT(t), demo.ReportName, req)
			require.NoError(t, err)
			require.Equal(t, map[bool]string{true: "RUNNING", false: "QUEUED"}[i < demo.ReportMaxRunning], res.State,
				"the first %d take free slots, the next queues", demo.ReportMaxRunning)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			st, err := b.api.Flow(ctxT(t))
			require.NoError(t, err)
			require.Contains(t, st.Limits, client.FlowLimit{WorkflowName: demo.ReportName, MaxRunning: demo.ReportMaxRunning, KeyPointer: "/customer"})
			require.Equal(t, []client.ActivityFlowLimit{{ActivityName: demo.RenderReportName, MaxRunning: 1, KeyPointer: "/customer"}}, st.ActivityLimits)
			if len(st.Keys) == 1 && st.Keys[0].Running == demo.ReportMaxRunning {
				require.Equal(t, client.FlowKey{Shard: st.Keys[0].Shard, WorkflowName: demo.ReportName, Key: "k1",
					Running: demo.ReportMaxRunning, Queued: 1}, st.Keys[0], "the caller's key wins over the pointer")
				break
			}
			require.True(t, time.Now().Before(deadline), "never %d running: %+v", demo.ReportMaxRunning, st)
			time.Sleep(20 * time.Millisecond)
		}
		_, err := b.api.Start(ctxT(t), demo.ReportName, client.StartRequest{Input: req.Input, Priority: 9})
		require.Error(t, err, "priority 9 is refused")
	})

	t.Run("ConflictPolicyAloneBringsStartedFresh", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		first, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{WorkflowID: "w", Input: waitingOrder,
			ConflictPolicy: client.ConflictUseExisting})
		require.NoError(t, err)
		require.Equal(t, ptr(true), first.StartedFresh)
		require.Nil(t, first.Deduplicated)

		attached, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{WorkflowID: "w", ConflictPolicy: client.ConflictUseExisting})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, attached.Status)
		require.Equal(t, first.ExecutionID, attached.ExecutionID)
		require.Equal(t, ptr(false), attached.StartedFresh)
		require.Nil(t, attached.Deduplicated)
	})
}

func TestServerSignals(t *testing.T) {
	t.Parallel()

	t.Run("KeyedSignalDeliversOnceAlsoAfterClose", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		run, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{Input: waitingOrder})
		require.NoError(t, err)
		opts := client.SignalOptions{IdempotencyKey: "sig-1"}
		first, err := b.api.Signal(ctxT(t), run.ExecutionID, demo.ApprovedSignal, json.RawMessage(`{"by":"ann"}`), opts)
		require.NoError(t, err)
		require.True(t, first.SignalDelivered)
		dup, err := b.api.Signal(ctxT(t), run.ExecutionID, demo.ApprovedSignal, demo.Approval{By: "bob"}, opts)
		require.NoError(t, err)
		require.False(t, dup.SignalDelivered)

		_, err = b.api.Cancel(ctxT(t), run.ExecutionID, "done")
		require.NoError(t, err)
		_, closed, err := b.api.Result(ctxT(t), run.ExecutionID, 20*time.Second)
		require.NoError(t, err)
		require.True(t, closed)
		late, err := b.api.Signal(ctxT(t), run.ExecutionID, demo.ApprovedSignal, nil, opts)
		require.NoError(t, err, "a retry of a delivered key is acknowledged after close")
		require.False(t, late.SignalDelivered)

		_, err = b.api.Signal(ctxT(t), run.ExecutionID, demo.ApprovedSignal, nil, client.SignalOptions{IdempotencyKey: "sig-2"})
		require.ErrorIs(t, err, client.ErrTerminal)
		require.NotErrorIs(t, err, client.ErrConflict)
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, "CANCELLED", apiErr.Field("state"))
		require.Equal(t, run.ExecutionID, apiErr.Field("execution_id"))

		page, err := b.api.History(ctxT(t), run.ExecutionID, client.HistoryQuery{EventTypes: []string{"SignalReceived"}})
		require.NoError(t, err)
		require.Len(t, page.Events, 1)
		require.JSONEq(t, `{"signal_name":"approved","payload":{"by":"ann"},"idempotency_key":"sig-1"}`, string(page.Events[0].Data))
	})

	t.Run("SignalWithStart", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		req := client.SignalWithStartRequest{WorkflowID: "ord-1", SignalName: demo.ApprovedSignal,
			SignalPayload: demo.Approval{By: "cy"}, Input: waitingOrder, IdempotencyKey: "sws-1"}
		first, err := b.api.SignalWithStart(ctxT(t), demo.OrderName, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, first.Status)
		require.Equal(t, ptr(true), first.StartedFresh, "raw: %s", first.Raw)
		require.True(t, first.SignalDelivered)

		again, err := b.api.SignalWithStart(ctxT(t), demo.OrderName, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, again.Status)
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.Equal(t, ptr(false), again.StartedFresh, "raw: %s", again.Raw)
		require.False(t, again.SignalDelivered)
	})
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	b := setupServer(t)

	t.Run("UnknownExecution", func(t *testing.T) {
		t.Parallel()
		_, err := b.api.Describe(ctxT(t), uuid.NewString())
		require.ErrorIs(t, err, client.ErrNotFound)
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, client.CodeNotFound, apiErr.Code)
		require.Equal(t, http.StatusNotFound, apiErr.Status)
		require.NotEmpty(t, apiErr.Message)
	})

	t.Run("UnknownWorkflow", func(t *testing.T) {
		t.Parallel()
		_, err := b.api.Start(ctxT(t), "nope", client.StartRequest{})
		require.ErrorIs(t, err, client.ErrNotFound)
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, client.CodeUnknownWorkflow, apiErr.Code)
	})

	t.Run("ConflictCarriesTheExistingRun", func(t *testing.T) {
		t.Parallel()
		run, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{WorkflowID: "taken", Input: waitingOrder})
		require.NoError(t, err)
		_, err = b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{WorkflowID: "taken", ReusePolicy: client.ReuseRejectDuplicate})
		require.ErrorIs(t, err, client.ErrConflict)
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, run.ExecutionID, apiErr.Field("existing_execution_id"))
		require.Equal(t, "RUNNING", apiErr.Field("existing_state"))
	})

	t.Run("InvalidPolicy", func(t *testing.T) {
		t.Parallel()
		_, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{ReusePolicy: "sometimes"})
		require.ErrorIs(t, err, client.ErrInvalid)
	})

	t.Run("TooLarge", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("x", api.MaxBodyBytesDefault)
		_, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{Input: big})
		require.ErrorIs(t, err, client.ErrTooLarge)
	})

	t.Run("CancelClosedRun", func(t *testing.T) {
		t.Parallel()
		run, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{Input: waitingOrder})
		require.NoError(t, err)
		term, err := b.api.Terminate(ctxT(t), run.ExecutionID, "ops")
		require.NoError(t, err)
		require.True(t, term.NewlyTerminated)
		_, err = b.api.Cancel(ctxT(t), run.ExecutionID, "late")
		require.ErrorIs(t, err, client.ErrTerminal)
		again, err := b.api.Terminate(ctxT(t), run.ExecutionID, "again")
		require.NoError(t, err)
		require.False(t, again.NewlyTerminated)
		require.Equal(t, "TERMINATED", again.State)
	})
}

func TestServerUnavailableWhenEngineStopped(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	b.engine.Stop()
	_, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{Input: waitingOrder})
	require.ErrorIs(t, err, client.ErrUnavailable)
}

func TestServerReads(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	run, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{WorkflowID: "r-1", Input: waitingOrder, Memo: map[string]string{"k": "v"}})
	require.NoError(t, err)

	t.Run("ResultOfRunningRunIsNotClosed", func(t *testing.T) {
		res, closed, err := b.api.Result(ctxT(t), run.ExecutionID, 50*time.Millisecond)
		require.NoError(t, err)
		require.False(t, closed)
		require.Nil(t, res)
	})

	t.Run("DescribeAndList", func(t *testing.T) {
		d, err := b.api.Describe(ctxT(t), run.ExecutionID)
		require.NoError(t, err)
		require.Equal(t, run.ExecutionID, d.Execution.ExecutionID)
		require.Equal(t, "r-1", d.Execution.WorkflowID)
		require.JSONEq(t, `{"k":"v"}`, string(d.Execution.Memo))
		require.Equal(t, "WorkflowStarted", d.History[0].Type)
		require.NotEmpty(t, d.HistoryEndpoint, "raw: %s", d.Raw)

		page, err := b.api.List(ctxT(t), client.ListQuery{WorkflowName: demo.OrderName, States: []string{"RUNNING"}, Order: client.OrderAsc})
		require.NoError(t, err)
		require.Len(t, page.Workflows, 1)
		require.Equal(t, run.ExecutionID, page.Workflows[0].ExecutionID)
		require.Empty(t, page.NextCursor)
	})

	t.Run("HistoryAfterNilStartsAtZero", func(t *testing.T) {
		all, err := b.api.History(ctxT(t), run.ExecutionID, client.HistoryQuery{})
		require.NoError(t, err)
		require.Equal(t, int64(0), all.Events[0].EventID)
		zero := int64(0)
		after, err := b.api.History(ctxT(t), run.ExecutionID, client.HistoryQuery{After: &zero})
		require.NoError(t, err)
		// The run may have moved on between the two reads: after holds at
		// least the events of all but event 0, in order from 1.
		require.GreaterOrEqual(t, len(after.Events), len(all.Events)-1)
		for i, e := range after.Events {
			require.Equal(t, int64(i+1), e.EventID)
		}
	})

	t.Run("ResultOfClosedRun", func(t *testing.T) {
		_, err := b.api.Terminate(ctxT(t), run.ExecutionID, "end")
		require.NoError(t, err)
		res, closed, err := b.api.Result(ctxT(t), run.ExecutionID, time.Second)
		require.NoError(t, err)
		require.True(t, closed)
		require.Equal(t, "TERMINATED", res.State)
		require.NotNil(t, res.CompletedAt)
	})
}

func TestServerStartThatWaits(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	input := json.RawMessage(`{"activities":1}`)

	t.Run("ClosedRunComesWithItsResult", func(t *testing.T) {
		res, err := b.api.Start(ctxT(t), demo.NoopChainName, client.StartRequest{Input: input, IdempotencyKey: "w-1",
			Wait: 20 * time.Second})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.Status)
		require.NotNil(t, res.Result, "raw: %s", res.Raw)
		require.Equal(t, "COMPLETED", res.Result.State)
		require.Equal(t, res.ExecutionID, res.Result.ExecutionID)
		read, closed, err := b.api.Result(ctxT(t), res.ExecutionID, 0)
		require.NoError(t, err)
		require.True(t, closed)
		require.JSONEq(t, string(read.Output), string(res.Result.Output))
		require.Equal(t, read.CompletedAt, res.Result.CompletedAt)
	})

	t.Run("WithoutWaitNoResult", func(t *testing.T) {
		res, err := b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{Input: waitingOrder})
		require.NoError(t, err)
		require.Nil(t, res.Result)
		res, err = b.api.Start(ctxT(t), demo.OrderName, client.StartRequest{Input: waitingOrder, Wait: 10 * time.Millisecond})
		require.NoError(t, err)
		require.Nil(t, res.Result, "the order waits for its approval")
	})
}
