package demo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

// TestOrderResetChargesOnce resets a charged order waiting for its
// approval to its first task (harvesttest's Env.Reset): the charge runs
// again with the key it had, the payment service charges once, and the
// approval sent to the first run's id completes the reset run.
func TestOrderResetChargesOnce(t *testing.T) {
	t.Parallel()
	svc := demo.NewServices()
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(svc).Register(reg))
	env := harvesttest.New(t, reg)
	run := env.Start(demo.OrderName, demo.OrderInput{OrderID: "o-9", AmountCents: 500, CustomerID: "c-9", SleepMS: 1})
	env.WaitFor(run.ExecutionID, "the charge", func(engine.Description) bool { return svc.Payments.TotalCalls() == 1 })
	res := env.Reset(run.ExecutionID, "first", "reset-o-9")
	require.Equal(t, run.ExecutionID, res.Replaced)
	env.Signal(run.ExecutionID, demo.ApprovedSignal, demo.Approval{By: "ann"})
	var out demo.OrderResult
	env.Output(res.ExecutionID, &out)
	require.Equal(t, 2, svc.Payments.TotalCalls(), "the charge ran again after the reset")
	require.Equal(t, 1, svc.Payments.Effects(), "and charged once: the same key")
	require.Equal(t, svc.Payments.Keys()[0], string(harvest.ActivityKey(run.ExecutionID.String(), "1")))
}
