package demo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

// A cancel that comes while the card is being charged waits for the
// charge, then refunds it: an abandoned charge could still go through.
func TestOrderCancelledDuringTheCharge(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	entered, release := make(chan struct{}), make(chan struct{})
	env.ReplaceActivity("charge_card", harvesttest.Fake(func(ctx *harvest.ActivityContext, in demo.OrderInput) (string, error) {
		close(entered)
		<-release
		return "ch_1", nil
	}))
	run := env.Start(demo.OrderName, demo.OrderInput{OrderID: "o-1", AmountCents: 100})
	<-entered
	_, err := env.Engine().Cancel(context.Background(), run.ExecutionID, "changed my mind")
	require.NoError(t, err)
	env.WaitFor(run.ExecutionID, "the cancel request in history", func(d engine.Description) bool {
		for _, ev := range d.History {
			if ev.Type == harvest.EventWorkflowCancelRequested {
				return true
			}
		}
		return false
	})
	close(release)
	require.Equal(t, engine.StateCancelled, env.Result(run.ExecutionID).State)
	var refunds, charged int
	for _, ev := range env.History(run.ExecutionID) {
		if ev.Type == harvest.EventActivityCompleted {
			charged++
		}
		if ev.Type == harvest.EventActivityScheduled && strings.Contains(string(ev.Data), `"refund_charge"`) {
			refunds++
		}
	}
	require.Equal(t, 1, refunds, "the charge that completed after the cancel is refunded once")
	require.Equal(t, 2, charged, "the charge and the refund completed")
}
