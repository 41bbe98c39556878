package engine

import (
	"context"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/internal/metrics"
)

// Workflow tasks on cached state (see statecache.go).

// taskWrites are the changes of a batch of workflow tasks, with the
// cached runs its tasks hold: settleLive caches or stops them once the
// batch's transaction ends.
type taskWrites struct {
	*runs.Changes
	live []*liveRun
}

func newTaskWrites() *taskWrites { return &taskWrites{Changes: runs.New()} }

// takeLive takes the cached runs of the claimed tasks out of the cache
// into w, which stops or caches each again once the transaction ends
// (settleLive): a task with one reads only the events from its position
// (loadHistories). A closed run's is dropped; one ahead of the claimed
// row is stale and stopped.
func (e *Engine) takeLive(w *taskWrites, tasks []claimedWorkflowTask) {
	for i := range tasks {
		t := &tasks[i]
		if IsTerminal(t.ex.State) {
			e.live.drop(t.ex.ID)
			continue
		}
		lr := e.live.take(t.ex.ID)
		switch {
		case lr == nil:
			e.live.misses.Add(1)
			metrics.StateCacheLookups.WithLabelValues("miss").Inc()
			continue
		case lr.next > t.ex.NextEventID:
			e.live.stale.Add(1)
			metrics.StateCacheLookups.WithLabelValues("rebuilt").Inc()
			lr.run.Stop()
			continue
		}
		e.live.hits.Add(1)
		metrics.StateCacheLookups.WithLabelValues("hit").Inc()
		lr.keep = false
		t.live = lr
		w.live = append(w.live, lr)
	}
}

// from is the first event id the task reads: the cached run's position,
// or the start of the history.
func (t claimedWorkflowTask) from() int64 {
	if t.live != nil {
		return t.live.pos
	}
	return 0
}

// runLive runs the task's workflow code, for at most WorkflowTaskTimeout:
// on its cached run when it has one, else (or when the cached step fails)
// on a run rebuilt by replaying the whole history. runErr fails the task;
// err (reading the history) fails the transaction.
func (e *Engine) runLive(ctx context.Context, tx *fence.Tx, t claimedWorkflowTask) (res harvest.TaskResult, run *harvest.Run, runErr, err error) {
	taskCtx, cancel := context.WithTimeout(ctx, e.cfg.WorkflowTaskTimeout)
	defer cancel()
	log := e.log.With().Str("execution_id", t.ex.ID.String()).Logger()
	history := t.history
	if lr := t.live; lr != nil {
		if res, runErr = lr.run.Advance(taskCtx, history); runErr == nil {
			return res, lr.run, nil, nil
		}
		e.live.stale.Add(1)
		metrics.StateCacheLookups.WithLabelValues("rebuilt").Inc()
		log.Debug().Err(runErr).Msg("cached workflow state failed its step, replaying")
		head, err := loadHistory(ctx, tx, t.ex, 0, int(lr.pos))
		if err != nil {
			return res, nil, nil, err
		}
		history = append(head, history...)
	}
	info := harvest.WorkflowInfo{ExecutionID: t.ex.ID.String(), WorkflowName: t.ex.WorkflowName, WorkflowID: t.ex.WorkflowID}
	run, res, runErr = e.reg.StartRun(taskCtx, harvest.WorkflowTask{Info: info, History: history}, log)
	return res, run, runErr, nil
}

// keepLive holds the run a task ran in w, to be cached if the
// transaction commits: its next task starts at pos, the task's first
// command; next is the run's next event id after the task. A closed run
// is stopped.
func (e *Engine) keepLive(w *taskWrites, t claimedWorkflowTask, run *harvest.Run, pos int64, closed bool) {
	if closed {
		run.Stop()
		return
	}
	lr := t.live
	if lr == nil {
		lr = &liveRun{id: t.ex.ID}
		w.live = append(w.live, lr)
	}
	lr.run, lr.pos, lr.next, lr.keep = run, pos, t.ex.NextEventID, true
}

// settleLive ends the runs w holds once its transaction ended (err nil:
// committed): a run whose task committed goes back to the cache, every
// other one is stopped (its state may be ahead of the database).
func (e *Engine) settleLive(w *taskWrites, err error) {
	for _, lr := range w.live {
		if err == nil && lr.keep && e.owning.Load() {
			e.live.put(lr)
			continue
		}
		lr.run.Stop()
	}
	w.live = nil
}

// cachedQuery answers a query from the run's cached state when the cache
// holds it at the execution's next event id (nothing recorded since its
// last task); ok false: the caller replays.
func (e *Engine) cachedQuery(id uuid.UUID, next int64, name string, args []byte) (out []byte, ok bool, err error) {
	lr := e.live.take(id)
	if lr == nil {
		return nil, false, nil
	}
	defer e.putBack(lr)
	if lr.next != next {
		return nil, false, nil
	}
	e.live.queryHits.Add(1)
	out, err = lr.run.Query(name, args)
	return out, true, err
}

// putBack returns a run a query took to the cache, unless the query
// stopped it.
func (e *Engine) putBack(lr *liveRun) {
	if !lr.run.Stopped() && e.owning.Load() {
		e.live.put(lr)
	}
}

// loadHistories reads, in one query, the history of every claimed
// running run: from its cached run's position when it has one, else the
// whole of it.
func loadHistories(ctx context.Context, tx *fence.Tx, tasks []claimedWorkflowTask) error {
	index := make(map[uuid.UUID]int, len(tasks))
	ids := make([]uuid.UUID, 0, len(tasks))
	froms := make([]int64, 0, len(tasks))
	for i, t := range tasks {
		if !IsTerminal(t.ex.State) {
			index[t.ex.ID] = i
			ids = append(ids, t.ex.ID)
			froms = append(froms, t.from())
		}
	}
	if len(ids) == 0 {
		return nil
	}
	err := store.LoadHistories(ctx, tx, ids, froms, func(id uuid.UUID, ev harvest.Event) error {
		i := index[id]
		tasks[i].history = append(tasks[i].history, ev)
		return nil
	})
	return wrapLoad(err)
}
