package api

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// localSource streams a run of a shard served here.
type localSource struct {
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
// was the last one.
func (l localSource) send(ctx context.Context, w *sseWriter) (drained bool, err error) {
	page, err := l.shard.History(ctx, l.id, engine.HistoryQuery{After: w.last, Limit: engine.HistoryPageMax})
	if err != nil {
		return false, err
	}
	for _, ev := range page.Events {
		raw, err := json.Marshal(ev)
		if err != nil {
			return false, err
		}
		w.event(sseHistory, strconv.FormatInt(ev.EventID, 10), raw)
	}
	w.flush()
	return page.NextCursor == nil, nil
}
