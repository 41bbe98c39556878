package payout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/examples/payments/payout"
	"github.com/harvestd/harvest/harvesttest"
)

// setup is a test environment over a fresh bank.
func setup(t *testing.T) (*harvesttest.Env, *payout.Bank) {
	t.Helper()
	bank := payout.NewBank()
	reg, err := payout.New(bank).Registry()
	require.NoError(t, err)
	return harvesttest.New(t, reg), bank
}

var input = payout.Input{PayoutID: "po-1", AmountCents: 125_000, Recipient: "acct-9"}

func TestPayout(t *testing.T) {
	t.Run("ApprovedPaysOnceAfterTheCoolingOff", func(t *testing.T) {
		env, bank := setup(t)
		bank.FailNext["notify"] = 2 // the transfer goes through, then notify fails twice
		run := env.Start(payout.WorkflowName, input, harvesttest.WithIdempotencyKey("payout-po-1"))
		env.WaitFor(run.ExecutionID, "the approval wait", func(d engine.Description) bool { return len(d.PendingTimers) == 1 })
		env.Signal(run.ExecutionID, payout.ApprovedName, payout.Approval{By: "ann"}, harvesttest.WithSignalKey("approval-1"))
		env.WaitFor(run.ExecutionID, "the cooling-off timer", func(d engine.Description) bool {
			for _, tm := range d.PendingTimers {
				if tm.FireAt.Sub(env.Now()) > 23*time.Hour {
					return true
				}
			}
			return false
		})
		_, moved := bank.Counts("transfer")
		require.Zero(t, moved, "nothing paid during the cooling-off")
		env.Advance(24*time.Hour + time.Minute)
		env.SkipTime(run.ExecutionID) // the first retry's backoff
		env.SkipTime(run.ExecutionID) // the second's
		var out payout.Result
		env.Output(run.ExecutionID, &out)
		require.Equal(t, "paid", out.Status)
		require.Equal(t, "ann", out.ApprovedBy)
		calls, moved := bank.Counts("transfer")
		require.Equal(t, 3, calls, "the activity ran three times")
		require.Equal(t, 1, moved, "its subkey moved the money once")
		_, moved = bank.Counts("reserve")
		require.Equal(t, 1, moved)
	})
	t.Run("NoApprovalInAnHourReleasesTheFunds", func(t *testing.T) {
		env, bank := setup(t)
		run := env.Start(payout.WorkflowName, input)
		timer := env.NextTimer(run.ExecutionID)
		env.Advance(time.Hour)
		var out payout.Result
		env.Output(run.ExecutionID, &out)
		require.Equal(t, "expired", out.Status)
		_, released := bank.Counts("release")
		require.Equal(t, 1, released)
		require.Equal(t, time.Hour, timer.FireAt.Sub(startedAt(t, env.History(run.ExecutionID))).Round(time.Minute))
	})
	t.Run("ARetriedStartIsTheSamePayout", func(t *testing.T) {
		env, bank := setup(t)
		first := env.Start(payout.WorkflowName, input, harvesttest.WithIdempotencyKey("payout-po-2"))
		again := env.Start(payout.WorkflowName, input, harvesttest.WithIdempotencyKey("payout-po-2"))
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		env.WaitFor(first.ExecutionID, "the approval wait", func(d engine.Description) bool { return len(d.PendingTimers) == 1 })
		_, moved := bank.Counts("reserve")
		require.Equal(t, 1, moved)
	})
}

// startedAt is the time of a run's WorkflowStarted event.
func startedAt(t *testing.T, events []harvest.Event) time.Time {
	t.Helper()
	require.NotEmpty(t, events)
	return events[0].Timestamp
}
