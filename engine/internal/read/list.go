package read

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// List pages runs by (created_at, execution_id) keyset.
func (r *Reader) List(ctx context.Context, q shardapi.ListQuery) (shardapi.ListPage, error) {
	size := clamp(q.PageSize, shardapi.ListPageDefault, shardapi.ListPageMax)
	curT, curID, err := decodeCursor(q.Cursor)
	if err != nil {
		return shardapi.ListPage{}, err
	}
	for _, s := range q.States {
		if !validState(s) {
			return shardapi.ListPage{}, fmt.Errorf("state %q: %w", s, shardapi.ErrInvalidArgument)
		}
	}
	if err := checkStarted(q); err != nil {
		return shardapi.ListPage{}, err
	}
	after, before := startedBounds(q)
	list, err := store.ListExecutions(ctx, r.d.Pool, store.ListFilter{
		States: q.States, WorkflowName: q.WorkflowName, WorkflowID: q.WorkflowID, WorkflowIDPrefix: q.WorkflowIDPrefix,
		CursorTime: curT, CursorID: curID, After: after, Before: before,
		Ascending: q.Ascending, Limit: size + 1,
	})
	if err != nil {
		return shardapi.ListPage{}, fmt.Errorf("list executions: %w", err)
	}
	page := shardapi.ListPage{Workflows: list}
	if len(list) > size {
		page.Workflows = list[:size]
		last := page.Workflows[size-1]
		page.NextCursor = encodeCursor(last.CreatedAt, last.ExecutionID)
	}
	if q.Counts {
		page.Counts, err = r.countByState(ctx, q)
	}
	return page, err
}

func validState(s string) bool { return slices.Contains(listStates, s) }

// ListCursor is the List cursor that continues after x.
func ListCursor(x shardapi.Execution) string { return encodeCursor(x.CreatedAt, x.ExecutionID) }

func encodeCursor(t time.Time, id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + "|" + id.String()))
}

func decodeCursor(c string) (*time.Time, *uuid.UUID, error) {
	if c == "" {
		return nil, nil, nil
	}
	bad := fmt.Errorf("cursor %q: %w", c, shardapi.ErrInvalidArgument)
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

// checkStarted refuses a started range that holds no instant.
func checkStarted(q shardapi.ListQuery) error {
	if !q.StartedAfter.IsZero() && !q.StartedBefore.IsZero() && !q.StartedAfter.Before(q.StartedBefore) {
		return fmt.Errorf("started_after %s is not before started_before %s: %w",
			q.StartedAfter.Format(time.RFC3339Nano), q.StartedBefore.Format(time.RFC3339Nano), shardapi.ErrInvalidArgument)
	}
	return nil
}

// startedBounds are q's started range as query arguments (nil: unbounded).
func startedBounds(q shardapi.ListQuery) (after, before *time.Time) {
	if !q.StartedAfter.IsZero() {
		after = &q.StartedAfter
	}
	if !q.StartedBefore.IsZero() {
		before = &q.StartedBefore
	}
	return after, before
}

// countByState counts the runs of q's name, id and started filters by
// state in one grouped read (the state_list index holds every column it
// needs when no name or id is given). Every state is present, 0 if none.
func (r *Reader) countByState(ctx context.Context, q shardapi.ListQuery) (map[string]int64, error) {
	after, before := startedBounds(q)
	counts := make(map[string]int64, len(listStates))
	for _, s := range listStates {
		counts[s] = 0
	}
	err := store.CountByState(ctx, r.d.Pool, q.WorkflowName, q.WorkflowID, q.WorkflowIDPrefix, after, before, func(state string, n int64) { counts[state] = n })
	if err != nil {
		return nil, fmt.Errorf("count executions: %w", err)
	}
	return counts, nil
}

// listStates are the states a run can be listed and counted in.
var listStates = []string{shardapi.StateQueued, shardapi.StateRunning, shardapi.StateCompleted, shardapi.StateFailed, shardapi.StateCancelled, shardapi.StateTimedOut, shardapi.StateTerminated, shardapi.StateContinuedAsNew}
