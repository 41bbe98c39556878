package demo_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/harvesttest"
)

func setup(t *testing.T) (*harvesttest.Env, *harvest.Registry) {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(demo.NewServices()).Register(reg))
	return harvesttest.New(t, reg), reg
}

// requireReplays replays the closed run's history twice: the same
// commands, no NonDeterminismError, nothing new.
func requireReplays(t *testing.T, env *harvesttest.Env, reg *harvest.Registry, id uuid.UUID) {
	t.Helper()
	task := harvest.WorkflowTask{History: env.History(id),
		Info: harvest.WorkflowInfo{ExecutionID: id.String(), WorkflowName: demo.ApprovalRaceName}}
	for range 2 {
		res, err := reg.RunWorkflowTask(context.Background(), task, zerolog.Nop())
		require.NoError(t, err)
		require.Empty(t, res.Commands)
	}
}

func TestApprovalRace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   demo.ApprovalRaceInput
		act  func(env *harvesttest.Env, id uuid.UUID)
		want demo.ApprovalRaceResult
	}{
		{"ActivityWins", demo.ApprovalRaceInput{}, func(*harvesttest.Env, uuid.UUID) {},
			demo.ApprovalRaceResult{Winner: "activity", By: "auto"}},
		{"SignalWins", demo.ApprovalRaceInput{AutoApproveMS: -1}, func(env *harvesttest.Env, id uuid.UUID) {
			env.Signal(id, demo.ApprovedSignal, demo.Approval{By: "ada"})
		}, demo.ApprovalRaceResult{Winner: "signal", By: "ada"}},
		{"TimerWins", demo.ApprovalRaceInput{AutoApproveMS: -1}, func(env *harvesttest.Env, id uuid.UUID) {
			env.SkipTime(id) // the 24 hours
		}, demo.ApprovalRaceResult{Winner: "timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, reg := setup(t)
			id := env.Start(demo.ApprovalRaceName, tc.in).ExecutionID
			tc.act(env, id)
			var got demo.ApprovalRaceResult
			env.Output(id, &got)
			require.Equal(t, tc.want, got)
			requireReplays(t, env, reg, id)
		})
	}
}
