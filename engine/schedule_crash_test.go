package engine

import (
	"testing"
	"time"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/stretchr/testify/require"
)

// scheduleCrashPoints are the crash points of a schedule's own steps;
// TestScheduleCrashPoints also stops a fire at the outbox's.
var scheduleCrashPoints = []loop.CrashPoint{crashScheduleBeforeCommit, crashScheduleCommitted}

// TestScheduleCrashPoints stops the engine at each boundary of a fire
// (its cursor and intent written or committed, its keyed start claimed or
// performed, its outcome recorded) and checks that the successor starts
// exactly one run for the nominal time and records it.
func TestScheduleCrashPoints(t *testing.T) {
	t.Parallel()
	points := append(slicesClone(scheduleCrashPoints), crashOutboxClaimed, crashOutboxPerformed, crashOutboxRecord)
	for _, p := range points {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			sb := setupSchedules(t)
			sb.e.Stop()
			hit, frozen := make(chan struct{}), make(chan struct{})
			e1 := sb.engine(t, func(c *Config) { c.crashHook = crashOnce(p, hit, frozen) })
			_, err := e1.CreateSchedule(ctxT(t), "crashy", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", Input: []byte(`"x"`)}, false)
			require.NoError(t, err)
			sb.clock.advance(time.Minute)
			select {
			case <-hit:
			case <-time.After(20 * time.Second):
				t.Fatalf("the fire never reached %s", p)
			}
			crash(e1)
			close(frozen)

			e2 := sb.engine(t)
			fires := waitFires(t, e2, "crashy", 1, false)
			require.Equal(t, fireStarted, fires[0].Outcome)
			require.Equal(t, sb.minute(1), fires[0].NominalTime.UTC())
			require.Equal(t, map[string]int{fires[0].Key: 1}, runsPerKey(t, sb.pool), "one run for the nominal time")
			s, err := e2.GetSchedule(ctxT(t), "crashy")
			require.NoError(t, err)
			require.Equal(t, sb.minute(1), s.Cursor.UTC())
			requireOutboxEmptyEventually(t, sb.pool)
		})
	}
}

func slicesClone(p []loop.CrashPoint) []loop.CrashPoint { return append([]loop.CrashPoint(nil), p...) }
