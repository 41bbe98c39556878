package maint

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// Deps is what the maintenance services use; the engine fills it.
type Deps struct {
	// Pool serves the reads made outside a fenced transaction (what is
	// due); Fence runs the fenced ones.
	Pool  *pgxpool.Pool
	Fence *fence.Fence
	// Settle acts on a committed change set (the engine's one
	// after-commit path).
	Settle runs.Settle
	// Crash is the tests' crash hook (nil in real builds).
	Crash loop.Crash
	Log   zerolog.Logger
	// Ahead is the clock's offset: workflow time is the database's time
	// plus Ahead.
	Ahead func() time.Duration
	// Poll is the loops' poll tick.
	Poll time.Duration
}

// now is workflow time by this node's clock.
func (d Deps) now() time.Time { return time.Now().Add(d.Ahead()) }
