package intake

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
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

// ProbeCall is one replay probe waiting for its group.
type ProbeCall struct {
	Name, Key string
	Reply     chan ProbeReply // buffered: a loop never blocks on it
}

// ProbeReply is a group's answer to one probe.
type ProbeReply struct {
	Claim LiveClaim
	Found bool
	// Single sends the probe through the single lookup.
	Single bool
}

// runProbeBatcher starts the probe batcher of this run of the engine.
func (in *Intake) runProbeBatcher(ctx context.Context) {
	if in.d.StartBatchMax <= 1 {
		in.Probes.Store(nil)
		return
	}
	g := loop.NewBatcher[*ProbeCall](probeBatchMax)
	in.Probes.Store(g)
	in.d.Spawn(ctx, func(ctx context.Context) {
		g.Run(ctx, probeLoops, func(calls []*ProbeCall) { in.AnswerProbes(ctx, calls) })
	})
}

// LiveClaim is a live claim's replay answer and the time the claim has
// left to live by the database's clock.
type LiveClaim struct {
	Res  shardapi.StartResult
	Left time.Duration
}

// lookupStartKey runs the replay probe through the batcher, or alone when
// the batcher is off or stopped.
func (in *Intake) lookupStartKey(ctx context.Context, name, key string) (shardapi.StartResult, time.Duration, error) {
	g := in.Probes.Load()
	if g == nil {
		return lookupClaimLeft(ctx, in.d.Pool, name, key, in.d.Window.Milliseconds())
	}
	c := &ProbeCall{Name: name, Key: key, Reply: make(chan ProbeReply, 1)}
	switch err := g.Submit(ctx, c); {
	case errors.Is(err, loop.ErrBatcherStopped):
		return lookupClaimLeft(ctx, in.d.Pool, name, key, in.d.Window.Milliseconds())
	case err != nil:
		return shardapi.StartResult{}, 0, err
	}
	r := <-c.Reply
	switch {
	case r.Single:
		return lookupClaimLeft(ctx, in.d.Pool, name, key, in.d.Window.Milliseconds())
	case !r.Found:
		return shardapi.StartResult{}, 0, shardapi.ErrNotFound
	}
	return r.Claim.Res, r.Claim.Left, nil
}

// AnswerProbes looks up a group of probes in one statement and answers
// each.
func (in *Intake) AnswerProbes(ctx context.Context, calls []*ProbeCall) {
	found, err := in.probeGroup(ctx, calls)
	for i, c := range calls {
		if err != nil {
			c.Reply <- ProbeReply{Single: true}
			continue
		}
		claim, ok := found[i]
		c.Reply <- ProbeReply{Claim: claim, Found: ok}
	}
}

func (in *Intake) probeGroup(ctx context.Context, calls []*ProbeCall) (map[int]LiveClaim, error) {
	ctx, cancel := context.WithTimeout(ctx, in.d.LeaseTTL)
	defer cancel()
	names, keys := make([]string, len(calls)), make([]string, len(calls))
	for i, c := range calls {
		names[i], keys[i] = c.Name, c.Key
	}
	rows, err := in.d.Pool.Query(ctx, store.LookupClaimsSQL, names, keys, in.d.Window.Milliseconds())
	if err != nil {
		return nil, err
	}
	found := make(map[int]LiveClaim, len(calls))
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
		res := shardapi.StartResult{ExecutionID: id, WorkflowName: c.Name, WorkflowID: deref(wfID), State: deref(state), Deduplicated: true}
		setLatest(&res, latest, latestState)
		found[int(i-1)] = LiveClaim{Left: secondsLeft(leftS), Res: res}
		return nil
	})
	return found, err
}
