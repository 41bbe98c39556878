package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/stretchr/testify/require"
)

// deferredCrashPoints are the crash points of a deferred fire's own
// steps; TestDeferredCrashPoints also stops a fire at the outbox's.
var deferredCrashPoints = []loop.CrashPoint{crashDeferredBeforeCommit, crashDeferredCommitted}

// TestDeferredCrashPoints stops the engine at each boundary of a fire
// (the item closed and its outbox row written or committed, its keyed
// start claimed or performed, its answer recorded) and checks that the
// successor starts exactly one run for the item, with every input the
// item collected, and records it.
func TestDeferredCrashPoints(t *testing.T) {
	t.Parallel()
	points := append(slices.Clone(deferredCrashPoints), crashOutboxClaimed, crashOutboxPerformed, crashOutboxRecord)
	for _, p := range points {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			db := setupDeferred(t)
			db.e.Stop()
			hit, frozen := make(chan struct{}), make(chan struct{})
			e1 := db.engine(t, func(c *Config) { c.crashHook = crashOnce(p, hit, frozen) })
			b := &Batch{Key: "crashy", MaxSize: 2}
			d := deferStart(t, e1, DeferRequest{Input: raw(t, "a"), Batch: b})
			deferStart(t, e1, DeferRequest{Input: raw(t, "b"), Batch: b})
			select {
			case <-hit:
			case <-time.After(20 * time.Second):
				t.Fatalf("the fire never reached %s", p)
			}
			crash(e1)
			close(frozen)

			e2 := db.engine(t)
			require.JSONEq(t, `["a", "b"]`, startedOutput(t, e2, d.ID))
			require.Equal(t, map[string]int{DeferredKey(d.ID): 1}, deferredRuns(t, db.pool), "one run for the item")
			requireOutboxEmptyEventually(t, db.pool)
		})
	}
}

// TestDeferredCrashWhileCollecting crashes the engine between the
// collecting of a batch and its fire: the successor keeps collecting into
// the same item and fires it once with every input.
func TestDeferredCrashWhileCollecting(t *testing.T) {
	t.Parallel()
	db := setupDeferred(t)
	b := &Batch{Key: "collect", MaxSize: 10, MaxWait: time.Minute}
	d := deferStart(t, db.e, DeferRequest{Input: raw(t, 1), Batch: b})
	deferStart(t, db.e, DeferRequest{Input: raw(t, 2), Batch: b})
	deb := deferStart(t, db.e, DeferRequest{Input: raw(t, "x"), Debounce: &Debounce{Key: "collect", Window: time.Minute}})
	crash(db.e)

	e2 := db.engine(t)
	again := deferStart(t, e2, DeferRequest{Input: raw(t, 3), Batch: b})
	require.Equal(t, d.ID, again.ID, "the successor collects into the same item")
	db.clock.advance(61 * time.Second)
	require.JSONEq(t, `[1, 2, 3]`, startedOutput(t, e2, d.ID))
	require.Equal(t, `"x"`, startedOutput(t, e2, deb.ID))
	require.Equal(t, map[string]int{DeferredKey(d.ID): 1, DeferredKey(deb.ID): 1}, deferredRuns(t, db.pool))
}
