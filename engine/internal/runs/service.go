package runs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
)

// Service is what every background service of the shard is handed (the
// Deps of each embeds it; the engine fills it): the services change runs
// in fenced transactions and act on the changes through Settle.
type Service struct {
	// Pool serves the reads made outside a fenced transaction (what is
	// due); Fence runs the fenced ones.
	Pool  *pgxpool.Pool
	Fence *fence.Fence
	// Settle acts on a committed change set (the engine's one
	// after-commit path).
	Settle Settle
	// Crash is the tests' crash hook (nil in real builds).
	Crash loop.Crash
	// Log is the service's logger (its "service" field names it).
	Log zerolog.Logger
	// Ahead is the clock's offset: workflow time is this node's time plus
	// Ahead.
	Ahead func() time.Duration
	// Poll is the service loop's poll tick.
	Poll time.Duration
}

// Now is workflow time by this node's clock.
func (s Service) Now() time.Time { return time.Now().Add(s.Ahead()) }

// WakeOutbox wakes the outbox for rows a service's transaction committed
// (through Settle, with nothing else to act on).
func (s Service) WakeOutbox(ctx context.Context) { s.Settle(ctx, Effects{Wake: loop.Outbox}, nil) }
