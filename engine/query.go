package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// GetExecution reads one run.
func (e *Engine) GetExecution(ctx context.Context, id uuid.UUID) (Execution, error) {
	x, err := store.GetExecution(ctx, e.pool, id)
	if err != nil {
		return Execution{}, fmt.Errorf("execution %s: %w", id, store.Translate(err))
	}
	return x, nil
}

// Describe returns a run with its pending work and first history events.
func (e *Engine) Describe(ctx context.Context, id uuid.UUID) (Description, error) {
	x, err := e.GetExecution(ctx, id)
	if err != nil {
		return Description{}, err
	}
	d := Description{Execution: x}
	if d.PendingActivities, err = e.pendingActivities(ctx, id); err != nil {
		return Description{}, err
	}
	if d.PendingTimers, err = e.pendingTimers(ctx, id); err != nil {
		return Description{}, err
	}
	more := false
	if d.History, more, err = e.historyPage(ctx, id, HistoryQuery{After: -1, Limit: DescribeHistoryLimit}); err != nil {
		return Description{}, err
	}
	d.HistoryTruncated = more
	if d.CancelRequestedAt, err = e.cancelRequestedAt(ctx, id); err != nil {
		return Description{}, err
	}
	if d.Children, err = e.childrenOf(ctx, id); err != nil {
		return Description{}, err
	}
	return d, nil
}

// cancelRequestedAt is the time of a run's WorkflowCancelRequested event.
func (e *Engine) cancelRequestedAt(ctx context.Context, id uuid.UUID) (*time.Time, error) {
	at, err := store.CancelRequestedAt(ctx, e.pool, id)
	if err != nil {
		return nil, fmt.Errorf("cancel request of %s: %w", id, err)
	}
	return at, nil
}

func (e *Engine) pendingActivities(ctx context.Context, id uuid.UUID) ([]PendingActivity, error) {
	acts, err := store.PendingActivities(ctx, e.pool, id)
	if err != nil {
		return nil, fmt.Errorf("pending activities of %s: %w", id, err)
	}
	return acts, nil
}

func (e *Engine) pendingTimers(ctx context.Context, id uuid.UUID) ([]PendingTimer, error) {
	timers, err := store.PendingTimers(ctx, e.pool, id)
	if err != nil {
		return nil, fmt.Errorf("pending timers of %s: %w", id, err)
	}
	return timers, nil
}

// Result waits up to wait for the run to close and returns its outcome,
// which may still be RUNNING when wait elapsed. A close this engine
// commits while Result waits hands its outcome over (see closeWatch), and
// a run this engine created and has not seen close is not read before
// the wait: a poll that waits for the close of a fresh run reads nothing.
// The PollInterval tick reads the run whatever the watch says. A run that
// continued as new is not an end: Result follows the chain to its
// successor within the same wait, and answers the outcome of the chain's
// last run (Outcome.ExecutionID).
func (e *Engine) Result(ctx context.Context, id uuid.UUID, wait time.Duration) (Outcome, error) {
	until := time.Now().Add(wait)
	for {
		o, err := e.runResult(ctx, id, time.Until(until))
		if err != nil || o.State != StateContinuedAsNew || o.ContinuedTo == nil {
			return o, err
		}
		id = *o.ContinuedTo
	}
}

// runResult is Result for one run of a chain.
func (e *Engine) runResult(ctx context.Context, id uuid.UUID, wait time.Duration) (Outcome, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(e.cfg.PollInterval)
	defer tick.Stop()
	w := e.closed.waitFor(id)
	defer w.release()
	closed := w.closed()
	var (
		o    Outcome
		read = !w.knownOpen || !e.Owning()
		err  error
	)
	for {
		if read {
			if o, err = e.outcome(ctx, id); err != nil || IsTerminal(o.State) {
				return o, err
			}
		}
		select {
		case <-ctx.Done():
			return o, ctx.Err()
		case <-deadline.C:
			if !read {
				return e.outcome(ctx, id)
			}
			return o, nil
		case <-closed:
			if o, ok := w.outcome(); ok {
				o.ExecutionID = id
				return o, nil
			}
			closed = nil // closed without its outcome: read the run a last time
		case <-tick.C:
		}
		read = true
	}
}

// outcome reads a run's outcome.
func (e *Engine) outcome(ctx context.Context, id uuid.UUID) (Outcome, error) {
	o, err := store.Outcome(ctx, e.pool, id)
	if err != nil {
		return Outcome{}, fmt.Errorf("execution %s: %w", id, store.Translate(err))
	}
	return o, nil
}

// History pages through a run's events in event_id order: a page holds
// at most q.Limit events and HistoryPageBytes of their data, and
// NextCursor, set when events follow, continues after its last event.
func (e *Engine) History(ctx context.Context, id uuid.UUID, q HistoryQuery) (HistoryPage, error) {
	x, err := e.GetExecution(ctx, id)
	if err != nil {
		return HistoryPage{}, err
	}
	events, more, err := e.historyPage(ctx, id, q)
	if err != nil {
		return HistoryPage{}, err
	}
	page := HistoryPage{Events: events, TotalEvents: x.EventCount, LastEventID: x.EventCount - 1}
	if more {
		next := events[len(events)-1].EventID
		page.NextCursor = &next
	}
	return page, nil
}

// historyPage reads the events of one page of q: at most its limit, and
// no more data than the engine's byte bound unless one event alone has
// more. more reports that events follow the page.
func (e *Engine) historyPage(ctx context.Context, id uuid.UUID, q HistoryQuery) (events []harvest.Event, more bool, err error) {
	limit := clamp(q.Limit, HistoryPageDefault, HistoryPageMax)
	maxBytes := e.cfg.HistoryPageBytes
	if q.MaxBytes > 0 && q.MaxBytes < maxBytes {
		maxBytes = q.MaxBytes
	}
	events, totals, err := store.HistoryPage(ctx, e.pool, id, q.After, q.Types, limit, maxBytes)
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", id, err)
	}
	n := pageLength(totals, limit, maxBytes)
	return events[:n], n < len(events), nil
}

// pageLength is how many of the events read, with running data sizes
// totals, fit a page of limit events and maxBytes: at least one.
func pageLength(totals []int64, limit int, maxBytes int64) int {
	n := 0
	for n < len(totals) && n < limit && (n == 0 || totals[n] <= maxBytes) {
		n++
	}
	return n
}

// List pages runs by (created_at, execution_id) keyset.
func (e *Engine) List(ctx context.Context, q ListQuery) (ListPage, error) {
	size := clamp(q.PageSize, ListPageDefault, ListPageMax)
	curT, curID, err := decodeCursor(q.Cursor)
	if err != nil {
		return ListPage{}, err
	}
	for _, s := range q.States {
		if !validState(s) {
			return ListPage{}, fmt.Errorf("state %q: %w", s, ErrInvalidArgument)
		}
	}
	if err := checkStarted(q); err != nil {
		return ListPage{}, err
	}
	after, before := startedBounds(q)
	list, err := store.ListExecutions(ctx, e.pool, store.ListFilter{
		States: q.States, WorkflowName: q.WorkflowName, WorkflowID: q.WorkflowID,
		CursorTime: curT, CursorID: curID, After: after, Before: before,
		Ascending: q.Ascending, Limit: size + 1,
	})
	if err != nil {
		return ListPage{}, fmt.Errorf("list executions: %w", err)
	}
	page := ListPage{Workflows: list}
	if len(list) > size {
		page.Workflows = list[:size]
		last := page.Workflows[size-1]
		page.NextCursor = encodeCursor(last.CreatedAt, last.ExecutionID)
	}
	if q.Counts {
		page.Counts, err = e.countByState(ctx, q)
	}
	return page, err
}

func validState(s string) bool { return slices.Contains(listStates, s) }

// ListCursor is the List cursor that continues after x.
func ListCursor(x Execution) string { return encodeCursor(x.CreatedAt, x.ExecutionID) }

func encodeCursor(t time.Time, id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + "|" + id.String()))
}

func decodeCursor(c string) (*time.Time, *uuid.UUID, error) {
	if c == "" {
		return nil, nil, nil
	}
	bad := fmt.Errorf("cursor %q: %w", c, ErrInvalidArgument)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, nil, bad
	}
	ts, idText, ok := strings.Cut(string(raw), "|")
	if !ok {
		return nil, nil, bad
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, nil, bad
	}
	id, err := uuid.Parse(idText)
	if err != nil {
		return nil, nil, errors.Join(bad, err)
	}
	return &t, &id, nil
}

func clamp(v, def, limit int) int {
	if v <= 0 {
		return def
	}
	return min(v, limit)
}
