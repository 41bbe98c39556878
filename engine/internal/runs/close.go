package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Send queues the changes, of runs locked by tx, on b after what b holds
// and sends b in one round trip: the single paths (cancel, terminate, a
// timer, a timeout, a signal, an activity outcome) write through the same
// change set as the batches.
func (ch *Changes) Send(ctx context.Context, tx *fence.Tx, b *pgx.Batch) error {
	ch.Ahead = tx.Ahead()
	ch.QueueSingle(b)
	return tx.Send(ctx, b)
}

// ForceClose adds WorkflowCancelled or WorkflowTerminated (state) to ch
// and seals the run.
func ForceClose(ch *Changes, ex *store.Exec, state, reason, replacedBy string) {
	t := harvest.EventWorkflowCancelled
	if state == shardapi.StateTerminated {
		t = harvest.EventWorkflowTerminated
	}
	cmd := harvest.NewCommand(t, harvest.WorkflowClosedData{Reason: reason, ReplacedBy: replacedBy})
	ch.AppendEvents(ex, []harvest.Command{cmd}, false)
	ch.Close(ex, state, nil, nil)
}

// CloseNow force-closes the run in its own round trip (a run that must
// give up its slot before the caller's next statement), and returns what
// the close asks of the engine once tx commits.
func CloseNow(ctx context.Context, tx *fence.Tx, ex *store.Exec, state, reason, replacedBy string) (Effects, error) {
	ch := New()
	ForceClose(ch, ex, state, reason, replacedBy)
	err := ch.Send(ctx, tx, &pgx.Batch{})
	return ch.Effects(), err
}

// TimeOut adds to ch the close of the run TIMED_OUT by its workflow
// timeout of kind, d after its start: WorkflowTimedOut, then the close.
func TimeOut(ch *Changes, ex *store.Exec, kind string, d time.Duration) error {
	info := harvest.ErrorInfo{Type: "timeout", Message: fmt.Sprintf("workflow %s timeout %s", kind, d)}
	raw, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encode timeout error: %w", err)
	}
	cmd := harvest.NewCommand(harvest.EventWorkflowTimedOut, harvest.WorkflowTimedOutData{TimeoutType: kind, Error: info})
	ch.AppendEvents(ex, []harvest.Command{cmd}, false)
	ch.Close(ex, shardapi.StateTimedOut, nil, raw)
	return nil
}
