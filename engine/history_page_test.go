package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/internal/wftask"
)

// TestHistoryPagesBoundedByBytes: pages of large signal payloads stop
// before the byte bound, and following next_cursor yields every event
// exactly once, in order.
func TestHistoryPagesBoundedByBytes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const bound = 100_000
	e := b.engine(t, func(c *Config) { c.HistoryPageBytes = bound })
	res := start(t, e, StartRequest{WorkflowName: "collect", Input: raw(t, "")})
	payloads := []string{strings.Repeat("a", 30_000), strings.Repeat("b", 45_000), strings.Repeat("c", 150_000),
		strings.Repeat("d", 30_000), strings.Repeat("e", 30_000), strings.Repeat("f", 60_000), "stop"}
	for _, p := range payloads {
		_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: res.ExecutionID, SignalName: "item", Payload: raw(t, p)})
		require.NoError(t, err)
	}
	waitClosed(t, e, res.ExecutionID)
	all, err := wftask.LoadHistory(ctxT(t), e.pool, &store.Exec{ID: res.ExecutionID}, 0, -1)
	require.NoError(t, err)

	t.Run("CursorsYieldEveryEventOnceInOrder", func(t *testing.T) {
		var got []harvest.Event
		q := HistoryQuery{After: -1, Limit: HistoryPageMax}
		for pages := 0; ; pages++ {
			require.Less(t, pages, len(all), "paging does not end")
			page, err := e.History(ctxT(t), res.ExecutionID, q)
			require.NoError(t, err)
			require.NotEmpty(t, page.Events)
			requirePageBounded(t, page.Events, bound)
			got = append(got, page.Events...)
			if page.NextCursor == nil {
				break
			}
			require.Equal(t, page.Events[len(page.Events)-1].EventID, *page.NextCursor)
			q.After = *page.NextCursor
		}
		require.Equal(t, eventIDs(all), eventIDs(got))
		require.Greater(t, len(all), len(payloads), "every signal is an event")
	})

	t.Run("AQueryMayBoundItsPagesBelowTheEngine", func(t *testing.T) {
		for _, c := range []struct {
			name       string
			query, got int64
		}{{"Below", 50_000, 50_000}, {"Above", 10 * bound, bound}} {
			var events []harvest.Event
			q := HistoryQuery{After: -1, Limit: HistoryPageMax, MaxBytes: c.query}
			pages := 0
			for ; ; pages++ {
				require.Less(t, pages, len(all), "paging does not end")
				page, err := e.History(ctxT(t), res.ExecutionID, q)
				require.NoError(t, err)
				requirePageBounded(t, page.Events, int(c.got))
				events = append(events, page.Events...)
				if page.NextCursor == nil {
					break
				}
				q.After = *page.NextCursor
			}
			require.Equal(t, eventIDs(all), eventIDs(events), c.name)
			require.Equal(t, all, events, "%s: the data of every event, as stored", c.name)
		}
	})

	t.Run("APageStopsBeforeTheBound", func(t *testing.T) {
		page, err := e.History(ctxT(t), res.ExecutionID, HistoryQuery{After: -1, Limit: HistoryPageMax})
		require.NoError(t, err)
		require.NotNil(t, page.NextCursor)
		require.Less(t, len(page.Events), len(all))
	})

	t.Run("AnEventOverTheBoundIsAPageOfItsOwn", func(t *testing.T) {
		big := -1
		for _, ev := range all {
			if len(ev.Data) > bound {
				big = int(ev.EventID)
				break // the first: the run's result, which has them all, is one too
			}
		}
		require.GreaterOrEqual(t, big, 0)
		page, err := e.History(ctxT(t), res.ExecutionID, HistoryQuery{After: int64(big) - 1, Limit: HistoryPageMax})
		require.NoError(t, err)
		require.Len(t, page.Events, 1)
		require.Equal(t, int64(big), *page.NextCursor)
	})

	t.Run("DescribeIsBoundedToo", func(t *testing.T) {
		d, err := e.Describe(ctxT(t), res.ExecutionID)
		require.NoError(t, err)
		require.True(t, d.HistoryTruncated)
		require.Less(t, len(d.History), len(all))
		requirePageBounded(t, d.History, bound)
	})
}

// requirePageBounded: a page of more than one event has at most bound
// bytes of data.
func requirePageBounded(t *testing.T, events []harvest.Event, bound int) {
	t.Helper()
	if len(events) < 2 {
		return
	}
	size := 0
	for _, ev := range events {
		size += len(ev.Data)
	}
	require.LessOrEqual(t, size, bound)
}

func eventIDs(events []harvest.Event) []int64 {
	ids := make([]int64, len(events))
	for i, ev := range events {
		ids[i] = ev.EventID
	}
	return ids
}
