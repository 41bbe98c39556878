package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harvestd/harvest/engine/internal/loop"
)

// crashRig is the first engine of a crash test: its crash hook stops it
// as hook says once the rig is armed (steps before arm run freely), and
// crashAtHit waits for that stop, abandons the engine and lets the frozen
// step go, so that a successor can take over.
type crashRig struct {
	e           *Engine
	armed       atomic.Bool
	hit, frozen chan struct{}
}

// newCrashRig starts the rig's engine on b, with more's config changes;
// hook is made from the rig's hit and frozen channels (crashOnce or
// crashNth).
func newCrashRig(t *testing.T, b *testBundle, hook func(hit, frozen chan struct{}) loop.Crash, more ...func(*Config)) *crashRig {
	t.Helper()
	r := &crashRig{hit: make(chan struct{}), frozen: make(chan struct{})}
	stop := hook(r.hit, r.frozen)
	crashing := func(c *Config) {
		c.crashHook = func(ctx context.Context, at loop.CrashPoint) error {
			if !r.armed.Load() {
				return nil
			}
			return stop(ctx, at)
		}
	}
	r.e = b.engine(t, append(more, crashing)...)
	return r
}

// nth is the hook of the n-th meeting of p.
func nth(p loop.CrashPoint, n int32) func(hit, frozen chan struct{}) loop.Crash {
	return func(hit, frozen chan struct{}) loop.Crash { return crashNth(p, n, hit, frozen) }
}

// once is the hook of the first meeting of p.
func once(p loop.CrashPoint) func(hit, frozen chan struct{}) loop.Crash {
	return func(hit, frozen chan struct{}) loop.Crash { return crashOnce(p, hit, frozen) }
}

// arm lets the hook stop the engine from now on.
func (r *crashRig) arm() { r.armed.Store(true) }

// crashAtHit waits (20 s at most) for the hook to stop the engine at
// what, abandons the engine and lets the stopped step go.
func (r *crashRig) crashAtHit(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.hit:
	case <-time.After(20 * time.Second):
		t.Fatalf("never met %s", what)
	}
	crash(r.e)
	close(r.frozen)
}
