package client_test

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

// orderDefs are the typed demo definitions the test node registers.
var orderDefs = demo.New(demo.NewServices())

func waitingInput() demo.OrderInput {
	return demo.OrderInput{OrderID: "o-1", AmountCents: 100, CustomerID: "c-1"}
}

func TestTypedStartAndIdempotentSignal(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	orders := client.WorkflowOf(b.api, orderDefs.Order)
	approved := client.SignalOf(b.api, demo.Approved)
	require.Equal(t, demo.OrderName, orders.Name())
	require.Equal(t, demo.ApprovedSignal, approved.Name())

	run, err := orders.Start(ctxT(t), demo.OrderInput{OrderID: "o-1", AmountCents: 100, CustomerID: "c-1", SleepMS: 1},
		client.WithWorkflowID("order-o-1"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, run.Status)
	require.Equal(t, "order-o-1", run.WorkflowID)

	first, err := approved.SendIdempotent(ctxT(t), run.ExecutionID, demo.Approval{By: "ann"}, "approve-o-1")
	require.NoError(t, err)
	require.True(t, first.SignalDelivered)
	second, err := approved.SendIdempotent(ctxT(t), run.ExecutionID, demo.Approval{By: "bob"}, "approve-o-1")
	require.NoError(t, err)
	require.False(t, second.SignalDelivered, "raw: %s", second.Raw)

	out, closed, err := orders.Result(ctxT(t), run.ExecutionID, 20*time.Second)
	require.NoError(t, err)
	require.True(t, closed)
	require.Equal(t, "approved", out.Status)
	require.Equal(t, "ann", out.Approver, "the first payload won")

	page, err := b.api.History(ctxT(t), run.ExecutionID, client.HistoryQuery{EventTypes: []string{"SignalReceived"}})
	require.NoError(t, err)
	require.Len(t, page.Events, 1, "one SignalReceived")
	require.JSONEq(t, `{"signal_name":"approved","payload":{"by":"ann"},"idempotency_key":"approve-o-1"}`, string(page.Events[0].Data))

	_, err = approved.SendIdempotent(ctxT(t), run.ExecutionID, demo.Approval{}, "")
	require.ErrorIs(t, err, client.ErrInvalid, "an empty key is refused before sending")
}

func TestTypedStartIdempotentAndOptions(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	orders := client.WorkflowOf(b.api, orderDefs.Order)

	first, err := orders.StartIdempotent(ctxT(t), waitingInput(), "evt-1", client.WithWorkflowID("w-1"),
		client.WithDelay(time.Hour), client.WithMemo(map[string]string{"k": "v"}))
	require.NoError(t, err)
	require.Equal(t, ptr(true), first.StartedFresh)
	again, err := orders.StartIdempotent(ctxT(t), demo.OrderInput{OrderID: "other"}, "evt-1")
	require.NoError(t, err)
	require.Equal(t, first.ExecutionID, again.ExecutionID)
	require.Equal(t, ptr(true), again.Deduplicated)

	_, err = orders.Start(ctxT(t), waitingInput(), client.WithWorkflowID("w-1"), client.WithReusePolicy(client.ReuseRejectDuplicate))
	require.ErrorIs(t, err, client.ErrConflict)
	attached, err := orders.Start(ctxT(t), waitingInput(), client.WithWorkflowID("w-1"), client.WithConflictPolicy(client.ConflictUseExisting))
	require.NoError(t, err)
	require.Equal(t, first.ExecutionID, attached.ExecutionID)

	_, err = orders.Start(ctxT(t), waitingInput(), client.WithStartAt(time.Now().Add(time.Hour)), client.WithDelay(time.Minute))
	require.ErrorIs(t, err, client.ErrInvalid, "delay and start_at together")
	_, err = orders.Start(ctxT(t), waitingInput(), client.WithCompletionCallback("ftp://example.com/x", nil))
	require.ErrorIs(t, err, client.ErrCallbackRefused)
	_, err = orders.StartIdempotent(ctxT(t), waitingInput(), "")
	require.ErrorIs(t, err, client.ErrInvalid)

	// A deferred run has not run its first task: its result is pending.
	_, closed, err := orders.Result(ctxT(t), first.ExecutionID, 0)
	require.NoError(t, err)
	require.False(t, closed)

	_, err = b.api.Terminate(ctxT(t), first.ExecutionID, "ops")
	require.NoError(t, err)
	_, closed, err = orders.Result(ctxT(t), first.ExecutionID, time.Second)
	require.True(t, closed)
	var runErr *client.RunError
	require.ErrorAs(t, err, &runErr)
	require.Equal(t, "TERMINATED", runErr.State)
}

// dropAnswerOnce forwards each request to the server; the first time, it
// then drops the server's answer and fails as a broken connection would.
type dropAnswerOnce struct {
	dropped atomic.Bool
	sent    atomic.Int32
}

func (d *dropAnswerOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	d.sent.Add(1)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !d.dropped.CompareAndSwap(false, true) {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("connection reset after the request was sent")
}

func TestRetryAfterLostAnswerKeepsTheKey(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	rt := &dropAnswerOnce{}
	c := client.New(b.url, client.WithHTTPClient(&http.Client{Transport: rt}),
		client.WithRetryPolicy(client.RetryPolicy{InitialBackoff: time.Millisecond}))
	orders := client.WorkflowOf(c, orderDefs.Order)

	run, err := orders.StartIdempotent(ctxT(t), waitingInput(), "evt-lost")
	require.NoError(t, err)
	require.Equal(t, int32(2), rt.sent.Load(), "the start was sent twice")
	require.Equal(t, ptr(true), run.Deduplicated, "the retry found the first attempt's run: raw %s", run.Raw)
	page, err := b.api.List(ctxT(t), client.ListQuery{WorkflowName: demo.OrderName})
	require.NoError(t, err)
	require.Len(t, page.Workflows, 1, "exactly one execution")
	require.Equal(t, run.ExecutionID, page.Workflows[0].ExecutionID)

	rt.dropped.Store(false)
	sig, err := client.SignalOf(c, demo.Approved).SendIdempotent(ctxT(t), run.ExecutionID, demo.Approval{By: "ann"}, "sig-lost")
	require.NoError(t, err)
	require.Equal(t, int32(4), rt.sent.Load())
	require.False(t, sig.SignalDelivered, "the first attempt delivered it")
	hist, err := b.api.History(ctxT(t), run.ExecutionID, client.HistoryQuery{EventTypes: []string{"SignalReceived"}})
	require.NoError(t, err)
	require.Len(t, hist.Events, 1)

	t.Run("KeylessStartIsNotRetried", func(t *testing.T) {
		rt.dropped.Store(false)
		sent := rt.sent.Load()
		_, err := orders.Start(ctxT(t), waitingInput())
		require.ErrorContains(t, err, "connection reset")
		require.Equal(t, sent+1, rt.sent.Load(), "a second attempt could start a second run")
	})
}

// countRequests counts the requests a client sends.
type countRequests struct{ sent atomic.Int32 }

func (c *countRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	c.sent.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestGatedStart(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	g, err := b.api.CloseGate(ctxT(t), client.CloseGateRequest{ID: "freeze", ScopeKind: client.GateWorkflowName, ScopeValue: demo.OrderName,
		Reason: "incident 42", ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, "freeze", g.ID)
	require.Equal(t, client.GateWorkflowName, g.ScopeKind)
	require.NotNil(t, g.ExpiresAt)

	gates, err := b.api.Gates(ctxT(t))
	require.NoError(t, err)
	require.Len(t, gates, 1)
	require.Equal(t, "incident 42", gates[0].Reason)
	require.NotEmpty(t, gates[0].Raw)

	// Counted on the wire, not timed: a retry after the 1 s Retry-After
	// would be a second request however fast or slow the machine is.
	rt := &countRequests{}
	counted := client.New(b.url, client.WithHTTPClient(&http.Client{Transport: rt}))
	_, err = client.WorkflowOf(counted, orderDefs.Order).Start(ctxT(t), waitingInput())
	require.ErrorIs(t, err, client.ErrGated)
	require.NotErrorIs(t, err, client.ErrUnavailable)
	require.Equal(t, int32(1), rt.sent.Load(), "a gated start is not retried")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "freeze", apiErr.Field("gate_id"))
	require.Equal(t, "incident 42", apiErr.Field("reason"))

	require.NoError(t, b.api.OpenGate(ctxT(t), "freeze"))
	require.ErrorIs(t, b.api.OpenGate(ctxT(t), "freeze"), client.ErrNotFound)
	_, err = client.WorkflowOf(b.api, orderDefs.Order).Start(ctxT(t), waitingInput())
	require.NoError(t, err)
}

func TestWorkflowRef(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	// What a client that does not link the worker's code declares.
	payout := harvest.WorkflowRef[demo.OrderInput, demo.OrderResult](demo.OrderName)
	orders := client.WorkflowOf(b.api, payout)
	require.Equal(t, demo.OrderName, orders.Name())

	run, err := orders.StartIdempotent(ctxT(t), demo.OrderInput{OrderID: "o-9", AmountCents: 5, CustomerID: "c-9", SleepMS: 1}, "ref-o-9")
	require.NoError(t, err)
	_, err = client.SignalOf(b.api, demo.Approved).SendIdempotent(ctxT(t), run.ExecutionID, demo.Approval{By: "cy"}, "approve-o-9")
	require.NoError(t, err)
	out, closed, err := orders.Result(ctxT(t), run.ExecutionID, 20*time.Second)
	require.NoError(t, err)
	require.True(t, closed)
	require.Equal(t, demo.OrderResult{ChargeID: out.ChargeID, Status: "approved", Approver: "cy"}, out)
	require.Equal(t, payout, orderDefs.Order.Ref(), "the definition's reference is the same value")
}
