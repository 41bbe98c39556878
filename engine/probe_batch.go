package engine

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Batched replay probes.
//
// Every keyed start first looks its key up (the read-only replay probe:
// a dedup hit is answered from it, without a write). Concurrent probes of
// a shard are handed to a batcher whose loops each take whatever probes
// are queued and look them all up in one read-only statement, so that a
// busy shard runs one lookup per group instead of one per request. A
// group whose statement fails sends each of its probes through the single
// lookup, which reports the error. The probe batcher runs when group
// commit does (StartBatchMax > 1).

const (
	// probeBatchMax is the most probes one lookup carries.
	probeBatchMax = 256
	// probeLoops is how many lookups may be in flight at once.
	probeLoops = 2
)

// probeCall is one replay probe waiting for its group.
type probeCall struct {
	name, key string
	reply     chan probeReply // buffered: a loop never blocks on it
}

type probeReply struct {
	claim liveClaim
	found bool
	// single sends the probe through the single lookup.
	single bool
}

// runProbeBatcher starts the probe batcher of this run of the engine.
func (e *Engine) runProbeBatcher(ctx context.Context) {
	if e.cfg.StartBatchMax <= 1 {
		e.probes.Store(nil)
		return
	}
	g := loop.NewBatcher[*probeCall](probeBatchMax)
	e.probes.Store(g)
	e.spawn(ctx, func(ctx context.Context) {
		g.Run(ctx, probeLoops, func(calls []*probeCall) { e.answerProbes(ctx, calls) })
	})
}

// liveClaim is a live claim's replay answer and the time the claim has
// left to live by the database's clock.
type liveClaim struct {
	res  StartResult
	left time.Duration
}

// lookupStartKey runs the replay probe through the batcher, or alone when
// the batcher is off or stopped.
func (e *Engine) lookupStartKey(ctx context.Context, name, key string) (StartResult, time.Duration, error) {
	g := e.probes.Load()
	if g == nil {
		return lookupClaimLeft(ctx, e.pool, name, key, e.cfg.IdempotencyWindow.Milliseconds())
	}
	c := &probeCall{name: name, key: key, reply: make(chan probeReply, 1)}
	switch err := g.Submit(ctx, c); {
	case errors.Is(err, loop.ErrBatcherStopped):
		return lookupClaimLeft(ctx, e.pool, name, key, e.cfg.IdempotencyWindow.Milliseconds())
	case err != nil:
		return StartResult{}, 0, err
	}
	r := <-c.reply
	switch {
	case r.single:
		return lookupClaimLeft(ctx, e.pool, name, key, e.cfg.IdempotencyWindow.Milliseconds())
	case !r.found:
		return StartResult{}, 0, ErrNotFound
	}
	return r.claim.res, r.claim.left, nil
}

// answerProbes looks up a group of probes in one statement and answers
// each.
func (e *Engine) answerProbes(ctx context.Context, calls []*probeCall) {
	found, err := e.probeGroup(ctx, calls)
	for i, c := range calls {
		if err != nil {
			c.reply <- probeReply{single: true}
			continue
		}
		claim, ok := found[i]
		c.reply <- probeReply{claim: claim, found: ok}
	}
}

func (e *Engine) probeGroup(ctx context.Context, calls []*probeCall) (map[int]liveClaim, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.LeaseTTL)
	defer cancel()
	names, keys := make([]string, len(calls)), make([]string, len(calls))
	for i, c := range calls {
		names[i], keys[i] = c.name, c.key
	}
	rows, err := e.pool.Query(ctx, store.LookupClaimsSQL, names, keys, e.cfg.IdempotencyWindow.Milliseconds())
	if err != nil {
		return nil, err
	}
	found := make(map[int]liveClaim, len(calls))
	var (
		i           int64
		id          uuid.UUID
		wfID, state *string
		leftS       float64
		latest      *uuid.UUID
		latestState *string
	)
	_, err = pgx.ForEachRow(rows, []any{&i, &id, &wfID, &state, &leftS, &latest, &latestState}, func() error {
		c := calls[i-1]
		res := StartResult{ExecutionID: id, WorkflowName: c.name, WorkflowID: deref(wfID), State: deref(state), Deduplicated: true}
		setLatest(&res, latest, latestState)
		found[int(i-1)] = liveClaim{left: secondsLeft(leftS), res: res}
		return nil
	})
	return found, err
}
