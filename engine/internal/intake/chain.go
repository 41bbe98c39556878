package intake

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Continue-as-new chains.
//
// A workflow task whose code returns harvest.ContinueAsNew hands its run
// over to a successor in the task's own transaction, with its other
// writes (runs.Changes, internal/runs/chain.go): the run closes
// CONTINUED_AS_NEW with continued_to naming the successor and gives up
// the workflow id's slot;
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
		cur, err := store.LockExec(ctx, tx, next)
		if err != nil || cur.ContinuedTo == nil {
			return cur, err
		}
		next = *cur.ContinuedTo
	}
}

// lockChainRun locks the run id, or the current run of its chain when it
// continued as new.
func lockChainRun(ctx context.Context, tx *fence.Tx, id uuid.UUID) (*store.Exec, error) {
	ex, err := store.LockExec(ctx, tx, id)
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
func setLatest(r *shardapi.StartResult, id *uuid.UUID, state *string) {
	if id != nil {
		r.LatestExecutionID, r.LatestState = *id, deref(state)
	}
}
