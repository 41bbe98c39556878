package engine

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/read"
)

// newReader makes the read path (internal/read).
func (e *Engine) newReader() *read.Reader {
	return read.New(read.Deps{Pool: e.pool, Watch: e.closed, Owning: e.Owning, Poll: e.cfg.PollInterval,
		HistoryPageBytes: e.cfg.HistoryPageBytes})
}

// GetExecution reads one run.
func (e *Engine) GetExecution(ctx context.Context, id uuid.UUID) (Execution, error) {
	return e.read.Get(ctx, id)
}

// Describe returns a run with its pending work and first history events.
func (e *Engine) Describe(ctx context.Context, id uuid.UUID) (Description, error) {
	return e.read.Describe(ctx, id)
}

// Result waits up to wait for the run to close and returns its outcome,
// which may still be RUNNING when wait elapsed; it follows a
// continue-as-new chain to its last run (read.Reader.Result).
func (e *Engine) Result(ctx context.Context, id uuid.UUID, wait time.Duration) (Outcome, error) {
	return e.read.Result(ctx, id, wait)
}

// History pages through a run's events in event_id order
// (read.Reader.History).
func (e *Engine) History(ctx context.Context, id uuid.UUID, q HistoryQuery) (HistoryPage, error) {
	return e.read.History(ctx, id, q)
}

// List pages runs by (created_at, execution_id) keyset.
func (e *Engine) List(ctx context.Context, q ListQuery) (ListPage, error) {
	return e.read.List(ctx, q)
}

// Children lists the children run id started, in command order
// (ErrNotFound when the run does not exist).
func (e *Engine) Children(ctx context.Context, id uuid.UUID) ([]Child, error) {
	return e.read.Children(ctx, id)
}

// ListCursor is the List cursor that continues after x.
func ListCursor(x Execution) string { return read.ListCursor(x) }
