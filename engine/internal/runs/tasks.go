package runs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Direct is one batch's directly dispatched activity tasks: as many of
// its new tasks (of runs it leaves open) as the engine had free activity
// slots are inserted claimed — running, attempt 1, stamped with the lease
// epoch — and read back into Tasks, for the engine to run once the batch
// commits (the engine's dispatch.go).
type Direct struct {
	Slots int       // slots taken for the batch
	Epoch int64     // the lease epoch the claims carry
	Since time.Time // before the claims: their attempts' timeouts count from it
	Tasks []store.ClaimedTask
	// Limited names the activities under a concurrency limit: their
	// tasks are inserted pending, for the activity loop's claim, which
	// gives them slots (nil: none).
	Limited map[string]bool
}

type activityRows struct {
	ids                                    []uuid.UUID
	wfNames, wfIDs                         []string
	activityIDs, names, queues, keys, opts []string
	inputs                                 []*string
	closeMS                                []*int64
	// options are opts as values, for the tasks dispatched directly.
	options []harvest.ActivityOptions
}

// addActivityTask adds the activity task a command schedules.
func (ch *Changes) addActivityTask(ex *store.Exec, d harvest.ActivityScheduledData) error {
	opts, err := json.Marshal(d.Options)
	if err != nil {
		return fmt.Errorf("encode activity options: %w", err)
	}
	var closeMS *int64
	if d.Options.ScheduleToClose > 0 {
		ms := d.Options.ScheduleToClose.Milliseconds()
		closeMS = &ms
	}
	t := &ch.tasks
	t.ids = append(t.ids, ex.ID)
	t.wfNames, t.wfIDs = append(t.wfNames, ex.WorkflowName), append(t.wfIDs, ex.WorkflowID)
	t.activityIDs = append(t.activityIDs, d.ActivityID)
	t.names = append(t.names, d.Name)
	t.queues = append(t.queues, d.Queue)
	t.inputs = append(t.inputs, JSONText(InputOrNull(d.Input)))
	t.keys = append(t.keys, d.IdempotencyKey)
	t.opts, t.options = append(t.opts, string(opts)), append(t.options, d.Options)
	t.closeMS = append(t.closeMS, closeMS)
	return nil
}

// queueActivityTasks queues the insert of the changes' activity tasks:
// with Direct, the first Direct.Slots of them (of runs the changes leave
// open) claimed and read back into Direct.Tasks; without, every task
// pending.
func (ch *Changes) queueActivityTasks(b *pgx.Batch) {
	t := &ch.tasks
	if len(t.ids) == 0 {
		return
	}
	cols := store.NewTasks{IDs: t.ids, ActivityIDs: t.activityIDs, Names: t.names, Queues: t.queues, Keys: t.keys,
		Opts: t.opts, Inputs: t.inputs, CloseMS: t.closeMS}
	claim := make([]bool, len(t.ids))
	ahead := ch.Ahead.Microseconds()
	d := ch.Direct
	if d == nil {
		store.QueueInsertTasks(b, cols, claim, 0, store.LeaseGrace.Milliseconds(), ahead, nil)
		return
	}
	at := ch.claimFirst(claim, d.Slots, d.Limited)
	store.QueueInsertTasks(b, cols, claim, d.Epoch, store.LeaseGrace.Milliseconds(), ahead, func(r store.InsertedTask) error {
		if !r.Claimed {
			return nil
		}
		i, ok := at[taskKey{r.ExecutionID, r.ActivityID}]
		if !ok {
			return fmt.Errorf("direct dispatch: task %s/%s was not asked for", r.ExecutionID, r.ActivityID)
		}
		var ct store.ClaimedTask
		ct.TaskID = r.TaskID
		t.fill(&ct, i)
		ct.CloseDeadline, ct.ClaimedAt = r.Deadline, r.Now
		d.Tasks = append(d.Tasks, ct)
		return nil
	})
}

// claimFirst flags in claim the first slots tasks of the changes' runs
// they leave open, but none of a limited activity, and returns their
// indexes by run and activity id.
func (ch *Changes) claimFirst(claim []bool, slots int, limited map[string]bool) map[taskKey]int {
	t := &ch.tasks
	closed := make(map[uuid.UUID]bool, len(ch.closed))
	for _, id := range ch.closed {
		closed[id] = true
	}
	for i, n := 0, 0; i < len(t.ids) && n < slots; i++ {
		if !closed[t.ids[i]] && !limited[t.names[i]] {
			claim[i] = true
			n++
		}
	}
	at := make(map[taskKey]int, slots)
	for i, c := range claim {
		if c {
			at[taskKey{t.ids[i], t.activityIDs[i]}] = i
		}
	}
	return at
}

type taskKey struct {
	id         uuid.UUID
	activityID string
}

// fill sets what row i of the changes says of a claimed attempt.
func (t *activityRows) fill(ct *store.ClaimedTask, i int) {
	ct.ExecutionID, ct.WorkflowName, ct.WorkflowID = t.ids[i], t.wfNames[i], t.wfIDs[i]
	ct.ActivityID, ct.Name, ct.Key, ct.Attempt = t.activityIDs[i], t.names[i], t.keys[i], 1
	if t.inputs[i] != nil {
		ct.Input = json.RawMessage(*t.inputs[i])
	}
	ct.Options = t.options[i]
}
