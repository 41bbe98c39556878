package engine

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/metrics"
)

// Group commit of activity completions.
//
// A successful attempt's completion is handed to the engine's completion
// batcher, one goroutine that takes whatever completions are queued (up to
// completionBatchMax, never waiting for more) and records them in one
// fenced transaction: the executions and tasks locked in one round trip
// (in id order), every task deleted and every ActivityCompleted appended in
// another, one commit. Failures, retries and timeouts take the single path
// (finishActivity), and so does every completion of a batch that fails as
// a whole.

// completionBatchMax is the most completions one transaction records.
const completionBatchMax = 128

// completion is one successful attempt waiting for its batch.
type completion struct {
	t   claimedTask
	out json.RawMessage
	// recorded answers true when the batch committed (the attempt was
	// recorded, or was stale and ignored), false to take the single path.
	recorded chan bool
}

// runCompletionBatcher starts the completion batcher of this run.
func (e *Engine) runCompletionBatcher(ctx context.Context) {
	g := newBatcher[*completion](completionBatchMax)
	e.completions.Store(g)
	e.spawn(ctx, func(ctx context.Context) {
		g.run(ctx, 1, func(batch []*completion) {
			ok := e.completeBatch(ctx, batch) == nil
			for _, c := range batch {
				c.recorded <- ok
			}
		})
	})
}

// recordCompletion records a successful attempt through the batcher. If
// the engine stops first nothing is recorded: the next owner reclaims the
// attempt, as after a crash.
func (e *Engine) recordCompletion(ctx context.Context, t claimedTask, out json.RawMessage) {
	g := e.completions.Load()
	if g == nil {
		e.finishActivity(ctx, t, out, nil, "")
		return
	}
	c := &completion{t: t, out: out, recorded: make(chan bool, 1)}
	if g.submit(ctx, c) != nil {
		return
	}
	if !<-c.recorded {
		e.finishActivity(ctx, t, out, nil, "")
	}
}

// completeBatch records the completions in one transaction. Attempts no
// longer current (reclaimed, or their run closed) are dropped as in
// finishActivity.
func (e *Engine) completeBatch(ctx context.Context, batch []*completion) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.LeaseTTL)
	defer cancel()
	var (
		execIDs []uuid.UUID
		taskIDs []int64
	)
	for _, c := range batch {
		execIDs = append(execIDs, c.t.ExecutionID)
		taskIDs = append(taskIDs, c.t.TaskID)
	}
	slices.Sort(taskIDs)
	exs := make(map[uuid.UUID]*execRow, len(execIDs))
	attempts := make(map[int64]int, len(taskIDs)) // running tasks' attempts
	queue := func(b *pgx.Batch) {
		queueLockExecutions(b, execIDs, exs)
		b.Queue(`
			SELECT task_id, attempt FROM harvest_tasks
			 WHERE task_id = ANY($1) AND status = 'running' ORDER BY task_id FOR UPDATE`, taskIDs).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var (
						id      int64
						attempt int
					)
					if err := rows.Scan(&id, &attempt); err != nil {
						return err
					}
					attempts[id] = attempt
				}
				return rows.Err()
			})
	}
	completed := 0
	err := e.withFencedBatch(ctx, queue, func(tx pgx.Tx) error {
		completed = 0
		b, w := &pgx.Batch{}, newWriteSet()
		var done []int64
		for _, c := range batch {
			ex, running := exs[c.t.ExecutionID], false
			if attempt, ok := attempts[c.t.TaskID]; ok {
				running = attempt == c.t.Attempt
			}
			if ex == nil || !running {
				continue // a stale attempt: its successor records the outcome
			}
			done = append(done, c.t.TaskID)
			if IsTerminal(ex.State) {
				continue
			}
			ev := harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{
				ActivityID: c.t.ActivityID, Output: inputOrNull(c.out), Attempt: c.t.Attempt})
			w.appendEvents(ex, []harvest.Command{ev}, true)
			completed++
		}
		if len(done) > 0 {
			b.Queue(`DELETE FROM harvest_tasks WHERE task_id = ANY($1)`, done)
		}
		w.queue(b)
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Debug().Err(err).Int("completions", len(batch)).Msg("completion batch failed, its completions run alone")
		}
		return err
	}
	if completed > 0 {
		metrics.ActivityAttempts.WithLabelValues("completed").Add(float64(completed))
		e.nudge(e.wfWake)
	}
	return nil
}
