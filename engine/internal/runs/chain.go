package runs

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Continue-as-new hand-overs (internal/intake/chain.go tells the whole
// story): a task whose code continues as new closes its run
// CONTINUED_AS_NEW naming its successor, and the changes insert the
// successor with its first events, its timeout timers and the chain's
// callbacks, in the task's own transaction.

// Workflow timeout kinds, the suffixes of the reserved timer ids.
const (
	TimeoutExecution = "execution"
	TimeoutRun       = "run"
)

// TimeoutTimerPrefix starts the timer id of a workflow timeout.
const TimeoutTimerPrefix = "$timeout:"

// ContinuesAsNew reports whether a task's result hands its run over.
func ContinuesAsNew(res harvest.TaskResult) bool {
	n := len(res.Commands)
	return res.Closed && n > 0 && res.Commands[n-1].Type == harvest.EventWorkflowContinuedAsNew
}

// fillContinueAsNew gives a WorkflowContinuedAsNew command its successor:
// a new execution id on the run's own shard.
func fillContinueAsNew(ex *store.Exec, c harvest.Command) (harvest.Command, error) {
	d, err := Payload[harvest.WorkflowContinuedAsNewData](c)
	if err != nil {
		return c, fmt.Errorf("decode WorkflowContinuedAsNew: %w", err)
	}
	d.NewExecutionID = shardapi.NewExecutionID(shardapi.ShardOf(ex.ID)).String()
	return harvest.NewCommand(c.Type, d), nil
}

// closeContinuedAsNew closes ex CONTINUED_AS_NEW and adds its hand-over.
func (ch *Changes) closeContinuedAsNew(ex *store.Exec, last harvest.Command) error {
	d, err := Payload[harvest.WorkflowContinuedAsNewData](last)
	if err != nil {
		return fmt.Errorf("decode WorkflowContinuedAsNew: %w", err)
	}
	next, err := uuid.Parse(d.NewExecutionID)
	if err != nil {
		return fmt.Errorf("continue %s: successor id %q: %w", ex.ID, d.NewExecutionID, err)
	}
	ch.Close(ex, shardapi.StateContinuedAsNew, nil, nil)
	ch.update(ex).ContinuedTo = next
	ch.handOvers.add(ex, next, d)
	return nil
}

// handOverRows are the successors the changes create.
type handOverRows struct {
	olds, news []uuid.UUID
	inputs     []string
	next       []int64 // the successor's next_event_id
	events     eventRows
	// stamped are a reset run's events, each stamped at its at (reset.go).
	stamped eventRows
	at      []time.Time
}

// add adds the successor next of ex with its first events.
func (h *handOverRows) add(ex *store.Exec, next uuid.UUID, d harvest.WorkflowContinuedAsNewData) {
	cmds := []harvest.Command{harvest.NewCommand(harvest.EventWorkflowStarted, harvest.WorkflowStartedData{
		WorkflowName: ex.WorkflowName, WorkflowID: ex.WorkflowID, Input: InputOrNull(d.Input),
		ContinuedFrom: ex.ID.String(), ChainID: ex.ChainID.String(),
	})}
	for _, s := range d.CarriedSignals {
		s.Payload = InputOrNull(s.Payload)
		cmds = append(cmds, harvest.NewCommand(harvest.EventSignalReceived, s))
	}
	if d.CancelRequested != nil {
		cmds = append(cmds, harvest.NewCommand(harvest.EventWorkflowCancelRequested, *d.CancelRequested))
	}
	for i, c := range cmds {
		h.events.add(next, int64(i), string(c.Type), string(c.Data))
	}
	h.olds, h.news = append(h.olds, ex.ID), append(h.news, next)
	h.inputs = append(h.inputs, string(InputOrNull(d.Input)))
	h.next = append(h.next, int64(len(cmds)))
}

// queueHandOvers queues the successors' inserts. It runs after the runs'
// UPDATE (which gave up the old runs' slots) and before the closes'
// clean-up (which deletes the old runs' timers): the successors copy the
// timeout timers and take over the callbacks.
func (ch *Changes) queueHandOvers(b *pgx.Batch) {
	h := &ch.handOvers
	if len(h.olds) == 0 {
		return
	}
	ahead := ch.Ahead.Microseconds()
	store.QueueHandOvers(b, h.olds, h.news, h.inputs, h.next)
	if len(h.events.ids) > 0 {
		store.QueueInsertEvents(b, h.events.ids, h.events.nums, h.events.types, h.events.data, ahead)
	}
	if len(h.stamped.ids) > 0 {
		store.QueueInsertEventsAt(b, h.stamped.ids, h.stamped.nums, h.stamped.types, h.stamped.data, h.at)
	}
	store.QueueHandOverTimers(b, h.olds, h.news, TimeoutTimerPrefix+TimeoutExecution, TimeoutTimerPrefix+TimeoutRun, ahead)
	store.QueueHandOverCallbacks(b, h.olds, h.news)
}
