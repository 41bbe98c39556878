package api

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// localSource streams a run of a shard served here.
type localSource struct {
	s     *Server
	shard Shard
	id    uuid.UUID
}

// run reads the run's state, then every event after w.last; a state that
// was terminal before the read means the events read were the last ones.
// Between reads it waits up to streamPoll for the run to close.
func (l localSource) run(ctx context.Context, w *sseWriter) (bool, error) {
	state := engine.StateRunning
	for {
		drained, err := l.send(ctx, w)
		if err != nil {
			return false, err
		}
		if drained && engine.IsTerminal(state) {
			if err := l.closed(ctx, w, state); err != nil {
				return false, err
			}
			return true, nil
		}
		if !drained {
			// The next page of a catch-up costs the caller's rate as a
			// request does (the stream's first page came with it).
			if err := l.s.chargePage(ctx, w.c); err != nil {
				return false, err
			}
			continue
		}
		w.heartbeat()
		o, err := l.shard.Result(ctx, l.id, streamPoll)
		if err != nil {
			return false, err
		}
		state = o.State
		if o.ExecutionID != uuid.Nil && o.ExecutionID != l.id {
			// Result followed a continue-as-new chain: this run is closed.
			state = engine.StateContinuedAsNew
		}
	}
}

// closed writes the closed event: the run's state and, for a run that
// continued as new, its successor.
func (l localSource) closed(ctx context.Context, w *sseWriter, state string) error {
	body := gin.H{"execution_id": l.id, "state": state}
	if state == engine.StateContinuedAsNew {
		d, err := l.shard.Describe(ctx, l.id)
		if err != nil {
			return err
		}
		body["continued_to"] = d.Execution.ContinuedTo
	}
	raw, _ := json.Marshal(body)
	w.event(sseClosed, "", raw)
	return nil
}

// send writes one page of events after w.last; drained reports the page
// was the last one. The page's share of the stream memory budget is
// taken before it is read and given back once it is written.
func (l localSource) send(ctx context.Context, w *sseWriter) (drained bool, err error) {
	budget := l.s.budget
	held, err := budget.acquire(ctx, pageCharge(l.s.streamPage))
	if err != nil {
		return false, err
	}
	defer func() { budget.release(held) }()
	page, err := l.shard.History(ctx, l.id, engine.HistoryQuery{After: w.last, Limit: engine.HistoryPageMax, MaxBytes: l.s.streamPage})
	if err != nil {
		return false, err
	}
	// A page over the bound is one event larger than a page: it takes
	// its own share (read and encoded) before it is encoded.
	if size := pageSize(page.Events); size > l.s.streamPage {
		if held, err = budget.grow(ctx, held, pageCharge(size)); err != nil {
			return false, err
		}
	}
	w.deadline(streamWriteTimeout)
	defer w.deadline(0)
	for _, ev := range page.Events {
		raw, err := json.Marshal(ev)
		if err != nil {
			return false, err
		}
		w.event(sseHistory, strconv.FormatInt(ev.EventID, 10), raw)
	}
	w.flush()
	return page.NextCursor == nil, w.err
}

// pageSize is the event data of a page.
func pageSize(events []harvest.Event) int64 {
	var n int64
	for _, ev := range events {
		n += int64(len(ev.Data))
	}
	return n
}
