package harvest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// feeV1 looks the fee up one way; feeV2 guards the second way with
// GetVersion, and reports the version it took.
var (
	feeV1 = harvest.NewWorkflow("fee", func(ctx harvest.Context, _ string) (string, error) {
		return echo.Execute(ctx, "flat").Get(ctx)
	})
	feeV2 = harvest.NewWorkflow("fee", func(ctx harvest.Context, _ string) (string, error) {
		if harvest.GetVersion(ctx, "fee-lookup", harvest.DefaultVersion, 1) == harvest.DefaultVersion {
			return echo.Execute(ctx, "flat").Get(ctx)
		}
		return echo.Execute(ctx, "percent").Get(ctx)
	})
	// feeV3 dropped the old branch: it supports version 1 only.
	feeV3 = harvest.NewWorkflow("fee", func(ctx harvest.Context, _ string) (string, error) {
		harvest.GetVersion(ctx, "fee-lookup", 1, 1)
		return echo.Execute(ctx, "percent").Get(ctx)
	})
)

func TestGetVersion(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, wf harvest.Registrable) *harvest.Registry {
		t.Helper()
		return harvest.NewRegistry().MustRegister(echo, wf)
	}

	t.Run("NewRunGetsMaxAndRecordsIt", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t, feeV2), "fee", "")
		res := h.mustTask()
		require.Len(t, res.Commands, 2)
		m := data[harvest.MarkerRecordedData](t, res.Commands[0])
		require.Equal(t, "version", m.Name)
		require.JSONEq(t, `{"change_id":"fee-lookup","version":1}`, string(m.Details))
		require.NotEmpty(t, m.Digest)
		require.Equal(t, "percent", string(data[harvest.ActivityScheduledData](t, res.Commands[1]).Input[1:8]))
		h.append(completed("2", "percent"))
		require.Equal(t, `"percent"`, output(t, h.mustTask()))
		replayed(t, h)
	})

	t.Run("RunFromBeforeTheChangeGetsDefaultVersion", func(t *testing.T) {
		t.Parallel()
		h := recordWith(t, setup(t, feeV1), "fee", "")
		h.reg = setup(t, feeV2)
		h.append(completed("1", "flat"))
		require.Equal(t, `"flat"`, output(t, h.mustTask()))
		replayed(t, h)
	})

	t.Run("ReplayGetsTheRecordedVersion", func(t *testing.T) {
		t.Parallel()
		h := recordWith(t, setup(t, feeV2), "fee", "")
		h.reg = setup(t, feeV3)
		h.append(completed("2", "percent"))
		require.Equal(t, `"percent"`, output(t, h.mustTask()))
	})

	t.Run("VersionBelowMinIsNonDeterministic", func(t *testing.T) {
		t.Parallel()
		h := recordWith(t, setup(t, feeV1), "fee", "")
		nd := replayWith(t, h, setup(t, feeV3))
		require.Equal(t, int64(1), nd.EventID)
		require.Contains(t, nd.Error(), `change "fee-lookup" has version -1, outside the supported range [1, 1]`)
	})

	t.Run("OtherChangeIDIsNonDeterministic", func(t *testing.T) {
		t.Parallel()
		h := recordWith(t, setup(t, feeV2), "fee", "")
		renamed := harvest.NewWorkflow("fee", func(ctx harvest.Context, _ string) (string, error) {
			harvest.GetVersion(ctx, "fee-lookup-2", harvest.DefaultVersion, 1)
			return echo.Execute(ctx, "percent").Get(ctx)
		})
		// The run's marker is for another change: this call gets the
		// default version, and the activity then meets the marker.
		nd := replayWith(t, h, setup(t, renamed))
		require.Contains(t, nd.Error(), "code issued ActivityScheduled(1 echo), history has MarkerRecorded(1 version)")
	})
}
