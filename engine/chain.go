package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Continue-as-new chains.
//
// A workflow task whose code returns harvest.ContinueAsNew hands its run
// over to a successor in the task's own transaction, with its other
// writes (writeSet.queueHandOvers): the run closes CONTINUED_AS_NEW with
// continued_to naming the successor and gives up the workflow id's slot;
// the successor, a new run of the same workflow name and id on the same
// shard, is inserted holding the slot, with chain_id (the chain's first
// run) and continued_from, its WorkflowStarted, the signals the old run
// did not consume (SignalReceived, keys included) and a pending cancel
// request as its first events, the chain's execution timeout (the same
// deadline), a run timeout of the same length from its own start, and the
// chain's completion callbacks. Nothing else knows of the hand-over: a
// crash before the commit leaves the old run open with its task due, and
// the retried task hands over again, to one successor. A first task run
// eagerly inside a start batch that continues as new is left to the
// workflow loop instead (first_task.go).
//
// Whoever addresses a continued run by its id reaches the chain's current
// run (lockCurrentRun): signals, cancel and terminate. A continued run is
// terminal, so its lock, taken first, is what orders a request behind a
// hand-over in progress: the request waits for the task's commit, then
// finds the run continued and follows it. Signal keys are scoped to the
// chain (migration 012): the ledger row carries the chain, and every
// dedup lookup is by (chain, key).

// continuesAsNew reports whether a task's result hands its run over.
func continuesAsNew(res harvest.TaskResult) bool {
	n := len(res.Commands)
	return res.Closed && n > 0 && res.Commands[n-1].Type == harvest.EventWorkflowContinuedAsNew
}

// fillContinueAsNew gives a WorkflowContinuedAsNew command its successor:
// a new execution id on the run's own shard.
func fillContinueAsNew(ex *store.Exec, c harvest.Command) (harvest.Command, error) {
	d, err := payload[harvest.WorkflowContinuedAsNewData](c)
	if err != nil {
		return c, fmt.Errorf("decode WorkflowContinuedAsNew: %w", err)
	}
	d.NewExecutionID = NewExecutionID(ShardOf(ex.ID)).String()
	return harvest.NewCommand(c.Type, d), nil
}

// closeContinuedAsNew closes ex CONTINUED_AS_NEW and queues its hand-over.
func closeContinuedAsNew(w *writeSet, ex *store.Exec, last harvest.Command) error {
	d, err := payload[harvest.WorkflowContinuedAsNewData](last)
	if err != nil {
		return fmt.Errorf("decode WorkflowContinuedAsNew: %w", err)
	}
	next, err := uuid.Parse(d.NewExecutionID)
	if err != nil {
		return fmt.Errorf("continue %s: successor id %q: %w", ex.ID, d.NewExecutionID, err)
	}
	w.closeExecution(ex, StateContinuedAsNew, nil, nil)
	w.exec(ex).continuedTo = next
	w.handOvers.add(ex, next, d)
	return nil
}

// handOverRows are the successors a write set creates.
type handOverRows struct {
	olds, news []uuid.UUID
	inputs     []string
	next       []int64 // the successor's next_event_id
	events     eventRows
}

// add queues the successor next of ex with its first events.
func (h *handOverRows) add(ex *store.Exec, next uuid.UUID, d harvest.WorkflowContinuedAsNewData) {
	cmds := []harvest.Command{harvest.NewCommand(harvest.EventWorkflowStarted, harvest.WorkflowStartedData{
		WorkflowName: ex.WorkflowName, WorkflowID: ex.WorkflowID, Input: inputOrNull(d.Input),
		ContinuedFrom: ex.ID.String(), ChainID: ex.ChainID.String(),
	})}
	for _, s := range d.CarriedSignals {
		s.Payload = inputOrNull(s.Payload)
		cmds = append(cmds, harvest.NewCommand(harvest.EventSignalReceived, s))
	}
	if d.CancelRequested != nil {
		cmds = append(cmds, harvest.NewCommand(harvest.EventWorkflowCancelRequested, *d.CancelRequested))
	}
	for i, c := range cmds {
		h.events.ids = append(h.events.ids, next)
		h.events.nums = append(h.events.nums, int64(i))
		h.events.types = append(h.events.types, string(c.Type))
		h.events.data = append(h.events.data, string(c.Data))
	}
	h.olds, h.news = append(h.olds, ex.ID), append(h.news, next)
	h.inputs = append(h.inputs, string(inputOrNull(d.Input)))
	h.next = append(h.next, int64(len(cmds)))
}

// queueHandOvers queues the successors' inserts. It runs after the
// executions' UPDATE (which gave up the old runs' slots) and before the
// closes' clean-up (which deletes the old runs' timers): the successors
// copy the timeout timers and take over the callbacks.
func (w *writeSet) queueHandOvers(b *pgx.Batch) {
	h := &w.handOvers
	if len(h.olds) == 0 {
		return
	}
	store.QueueHandOvers(b, h.olds, h.news, h.inputs, h.next)
	store.QueueInsertEvents(b, h.events.ids, h.events.nums, h.events.types, h.events.data, micros(w.ahead))
	store.QueueHandOverTimers(b, h.olds, h.news, timeoutTimerPrefix+TimeoutExecution, timeoutTimerPrefix+TimeoutRun, micros(w.ahead))
	store.QueueHandOverCallbacks(b, h.olds, h.news)
}

// wakeSuccessors wakes the workflow loop for the successors a committed
// write set created: their first tasks are due at once.
func (e *Engine) wakeSuccessors(w *writeSet) {
	if len(w.handOvers.news) > 0 {
		e.nudge(e.wfWake)
	}
}

// lockCurrentRun returns the current run of ex's chain, locked: ex itself
// unless it continued as new. ex must be locked: once it continued, its
// successors exist.
func lockCurrentRun(ctx context.Context, tx *fence.Tx, ex *store.Exec) (*store.Exec, error) {
	if ex.ContinuedTo == nil {
		return ex, nil
	}
	next := *ex.ContinuedTo
	// Jump to the run the chain's last commit made current; if it is
	// handing over right now, the lock waits and the loop follows.
	if cur, ok, err := currentOfChain(ctx, tx, ex.ChainID); err != nil {
		return nil, err
	} else if ok {
		next = cur
	}
	for {
		cur, err := lockExecution(ctx, tx, next)
		if err != nil || cur.ContinuedTo == nil {
			return cur, err
		}
		next = *cur.ContinuedTo
	}
}

// lockChainRun locks the run id, or the current run of its chain when it
// continued as new.
func lockChainRun(ctx context.Context, tx *fence.Tx, id uuid.UUID) (*store.Exec, error) {
	ex, err := lockExecution(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	return lockCurrentRun(ctx, tx, ex)
}

// currentOfChain is the run of the chain that has not continued, as of
// the last commit (ok is false when none is visible).
func currentOfChain(ctx context.Context, q store.Querier, chain uuid.UUID) (uuid.UUID, bool, error) {
	id, err := store.CurrentOfChain(ctx, q, chain)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("current run of chain %s: %w", chain, err)
	}
	return id, true, nil
}

// setLatest fills a replay answer r's current run of the chain.
func setLatest(r *StartResult, id *uuid.UUID, state *string) {
	if id != nil {
		r.LatestExecutionID, r.LatestState = *id, deref(state)
	}
}
