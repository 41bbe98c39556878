package read

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// History pages through a run's events in event_id order: a page holds
// at most q.Limit events and HistoryPageBytes of their data, and
// NextCursor, set when events follow, continues after its last event.
func (r *Reader) History(ctx context.Context, id uuid.UUID, q shardapi.HistoryQuery) (shardapi.HistoryPage, error) {
	x, err := r.Get(ctx, id)
	if err != nil {
		return shardapi.HistoryPage{}, err
	}
	events, more, err := r.historyPage(ctx, id, q)
	if err != nil {
		return shardapi.HistoryPage{}, err
	}
	page := shardapi.HistoryPage{Events: events, TotalEvents: x.EventCount, LastEventID: x.EventCount - 1}
	if more {
		next := events[len(events)-1].EventID
		page.NextCursor = &next
	}
	return page, nil
}

// historyPage reads the events of one page of q: at most its limit, and
// no more data than the engine's byte bound unless one event alone has
// more. more reports that events follow the page.
func (r *Reader) historyPage(ctx context.Context, id uuid.UUID, q shardapi.HistoryQuery) (events []harvest.Event, more bool, err error) {
	limit := clamp(q.Limit, shardapi.HistoryPageDefault, shardapi.HistoryPageMax)
	maxBytes := r.d.HistoryPageBytes
	if q.MaxBytes > 0 && q.MaxBytes < maxBytes {
		maxBytes = q.MaxBytes
	}
	events, totals, err := store.HistoryPage(ctx, r.d.Pool, id, q.After, q.Types, limit, maxBytes)
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
