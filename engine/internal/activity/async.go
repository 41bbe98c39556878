package activity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// Async completion: an activity attempt that returns harvest.ErrResultPending
// after minting its task token stays open (its task running, async set)
// until the token's holder completes or fails it (CompleteActivity,
// FailActivity) or a timeout closes it (sweepAsync). Heartbeats
// (HeartbeatActivity) push its heartbeat timeout back.
//
// A task token is "hvtt_" + the execution id in hex (so any node routes it
// to its shard) + "_" + 32 random bytes in hex. Only its SHA-256 is stored
// (harvest_task_tokens), with the task and the attempt it was minted for.

// TokenPrefix starts every task token.
const TokenPrefix = "hvtt_"

// ParseTaskToken returns the execution a task token is for;
// shardapi.ErrTaskToken when it is not one.
func ParseTaskToken(token string) (uuid.UUID, error) {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	idHex, secret, ok2 := strings.Cut(rest, "_")
	raw, err := hex.DecodeString(idHex)
	if !ok || !ok2 || err != nil || len(raw) != 16 || len(secret) != 64 {
		return uuid.Nil, shardapi.ErrTaskToken
	}
	if _, err := hex.DecodeString(secret); err != nil {
		return uuid.Nil, shardapi.ErrTaskToken
	}
	return uuid.UUID(raw), nil
}

// HashToken is the stored form of a task token: its SHA-256.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// mintTaskToken makes the token of attempt t and stores its hash, if the
// attempt is still current.
func (a *Attempts) mintTaskToken(ctx context.Context, t Task) (string, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", fmt.Errorf("mint task token: %w", err)
	}
	token := TokenPrefix + hex.EncodeToString(t.ExecutionID[:]) + "_" + hex.EncodeToString(secret[:])
	err := a.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		inserted, err := store.InsertTaskToken(ctx, tx, HashToken(token), t.TaskID, t.Attempt)
		if err != nil {
			return fmt.Errorf("store task token: %w", err)
		}
		if !inserted {
			return errStaleAttempt
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// markAsync leaves attempt t open for its token's holder: until the
// attempt's start-to-close (or schedule-to-close) deadline, left from
// now, or the heartbeat timeout, whichever comes first. False when the
// attempt is not current any more (its token's holder answered already).
func (a *Attempts) markAsync(ctx context.Context, t Task, left time.Duration) (bool, error) {
	hb := t.Options.WithDefaults().HeartbeatTimeout
	var marked bool
	err := a.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		var err error
		marked, err = store.MarkAsync(ctx, tx, t.TaskID, t.Attempt, left.Microseconds(), hb.Microseconds())
		return err
	})
	return marked, err
}

// asyncTask is the attempt a token names, locked.
type asyncTask struct {
	Task
	Status string
}

// CompleteActivity completes the attempt token names with out.
func (a *Attempts) CompleteActivity(ctx context.Context, token string, out json.RawMessage) (shardapi.AsyncAnswer, error) {
	return a.answerAsync(ctx, token, "completed", out, nil)
}

// FailActivity fails the attempt token names with info; the retry policy
// applies (a retryable failure makes a new attempt due).
func (a *Attempts) FailActivity(ctx context.Context, token string, info harvest.ErrorInfo) (shardapi.AsyncAnswer, error) {
	return a.answerAsync(ctx, token, "failed", nil, &harvest.ApplicationError{Type: info.Type, Message: info.Message,
		NonRetryable: info.NonRetryable, Details: info.Details})
}

// answerAsync records an answer to the attempt token names, in one
// transaction with the token's record: an unknown token is shardapi.ErrTaskToken;
// the same answer again is a Duplicate (nothing appended, even after the
// run closed); another answer after one was accepted is shardapi.ErrAnswered; a
// closed run is a *shardapi.TerminalError and an attempt that is no longer current
// shardapi.ErrStaleAttempt.
func (a *Attempts) answerAsync(ctx context.Context, token, kind string, out json.RawMessage, runErr error) (shardapi.AsyncAnswer, error) {
	var (
		ans shardapi.AsyncAnswer
		res attemptOutcome
	)
	err := a.withTaskToken(ctx, token, func(tx *fence.Tx, id uuid.UUID, ex *store.Exec, tok *store.TaskToken) error {
		ans = shardapi.AsyncAnswer{ExecutionID: id, ActivityID: tok.ActivityID, Attempt: tok.Attempt}
		switch {
		case tok.Answer != nil && *tok.Answer == kind:
			ans.Duplicate = true
			return nil
		case tok.Answer != nil:
			return fmt.Errorf("attempt %d of activity %s was %s: %w", tok.Attempt, tok.ActivityID, *tok.Answer, shardapi.ErrAnswered)
		case shardapi.IsTerminal(ex.State):
			return &shardapi.TerminalError{ExecutionID: id.String(), State: ex.State}
		}
		t, err := lockAsyncTask(ctx, tx, tok.TaskID, ex)
		if err != nil {
			return err
		}
		if t == nil || t.Attempt != tok.Attempt || t.Status != "running" {
			return fmt.Errorf("attempt %d of activity %s: %w", tok.Attempt, tok.ActivityID, errStaleAttempt)
		}
		if err := store.RecordTokenAnswer(ctx, tx, HashToken(token), kind); err != nil {
			return fmt.Errorf("record task token answer: %w", err)
		}
		res, err = a.writeAsyncOutcome(ctx, tx, t.Task, ex, out, runErr)
		ans.Retried = res.outcome == "retried"
		return err
	})
	if errors.Is(err, errStaleAttempt) {
		return shardapi.AsyncAnswer{}, fmt.Errorf("%s: %w", strings.TrimSuffix(err.Error(), ": "+errStaleAttempt.Error()), shardapi.ErrStaleAttempt)
	}
	if err != nil {
		return shardapi.AsyncAnswer{}, err
	}
	a.afterOutcome(ctx, res)
	return ans, nil
}

// writeAsyncOutcome writes an attempt's outcome as recordOutcome does.
func (a *Attempts) writeAsyncOutcome(ctx context.Context, tx *fence.Tx, t Task, ex *store.Exec, out json.RawMessage, runErr error) (attemptOutcome, error) {
	var res attemptOutcome
	ev := harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{
		ActivityID: t.ActivityID, Output: runs.InputOrNull(out), Attempt: t.Attempt, Slot: t.Slot})
	res.outcome = "completed"
	if runErr != nil {
		info := harvest.ToErrorInfo(runErr)
		retried, delay, err := a.maybeRetry(ctx, tx, t, info, "")
		if err != nil || retried {
			res.outcome, res.retryIn = "retried", delay
			return res, err
		}
		ev, res.outcome = failureCommand(t, info, ""), "failed"
	}
	var err error
	res.fx, err = a.writeOutcome(ctx, tx, t, ex, ev)
	return res, err
}

// afterOutcome does what a recorded outcome asks: its metric, the retry's
// wake-up, what its event asks of the engine (the run's workflow task).
func (a *Attempts) afterOutcome(ctx context.Context, res attemptOutcome) {
	if res.outcome != "" {
		metrics.ActivityAttempts.WithLabelValues(res.outcome).Inc()
	}
	if res.outcome == "retried" {
		a.retryWake.After(res.retryIn)
	}
	a.d.Settle(ctx, res.fx, nil)
}

// HeartbeatActivity records a heartbeat of the attempt token names and
// pushes its heartbeat timeout back; CancelRequested says the workflow
// cancelled the activity (fail it then, or complete it).
func (a *Attempts) HeartbeatActivity(ctx context.Context, token string, details json.RawMessage) (shardapi.AsyncAnswer, error) {
	var ans shardapi.AsyncAnswer
	err := a.withTaskToken(ctx, token, func(tx *fence.Tx, id uuid.UUID, ex *store.Exec, tok *store.TaskToken) error {
		ans = shardapi.AsyncAnswer{ExecutionID: id, ActivityID: tok.ActivityID, Attempt: tok.Attempt}
		if shardapi.IsTerminal(ex.State) {
			return &shardapi.TerminalError{ExecutionID: id.String(), State: ex.State}
		}
		if tok.Answer != nil {
			return fmt.Errorf("attempt %d of activity %s was %s: %w", tok.Attempt, tok.ActivityID, *tok.Answer, shardapi.ErrAnswered)
		}
		t, err := lockAsyncTask(ctx, tx, tok.TaskID, ex)
		if err != nil {
			return err
		}
		if t == nil || t.Attempt != tok.Attempt || t.Status != "running" {
			return fmt.Errorf("attempt %d of activity %s: %w", tok.Attempt, tok.ActivityID, shardapi.ErrStaleAttempt)
		}
		hb := t.Options.WithDefaults().HeartbeatTimeout
		ans.CancelRequested, err = store.HeartbeatAsync(ctx, tx, t.TaskID, store.NullJSON(details), hb.Microseconds())
		if err != nil {
			return fmt.Errorf("record heartbeat: %w", err)
		}
		return nil
	})
	return ans, err
}

// withTaskToken runs fn in a fenced transaction with the run and the
// token record of token locked: an unknown token is shardapi.ErrTaskToken.
func (a *Attempts) withTaskToken(ctx context.Context, token string, fn func(tx *fence.Tx, id uuid.UUID, ex *store.Exec, tok *store.TaskToken) error) error {
	if err := a.d.Fence.CheckOwning(); err != nil {
		return err
	}
	id, err := ParseTaskToken(token)
	if err != nil {
		return err
	}
	var (
		ex  *store.Exec
		tok *store.TaskToken
	)
	queue := func(b *pgx.Batch) {
		store.QueueLockExec(b, id, &ex)
		store.QueueLockTaskToken(b, HashToken(token), id, &tok)
	}
	return a.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		if tok == nil || ex == nil {
			return shardapi.ErrTaskToken
		}
		return fn(tx, id, ex, tok)
	})
}

// lockAsyncTask locks the task taskID of ex; nil when it is gone.
func lockAsyncTask(ctx context.Context, tx *fence.Tx, taskID int64, ex *store.Exec) (*asyncTask, error) {
	ct, status, found, err := store.LockAsyncTask(ctx, tx, taskID)
	if err != nil || !found {
		return nil, err
	}
	t := &asyncTask{Task: Task{ClaimedTask: ct}, Status: status}
	t.WorkflowName, t.WorkflowID = ex.WorkflowName, ex.WorkflowID
	return t, nil
}

// sweepAsync (on every tick of the activity loop) records the timeout of
// every async attempt whose lock expired: schedule-to-close past its deadline, start-to-close past
// async_deadline, else the heartbeat timeout. The retry policy applies.
func (a *Attempts) sweepAsync(ctx context.Context) {
	var tasks []Task
	var types []string
	err := a.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		return store.ExpiredAsyncTasks(ctx, tx, tx.Ahead().Microseconds(), TimeoutScheduleToClose, TimeoutStartToClose, TimeoutHeartbeat,
			func(ct store.ClaimedTask, typ string) {
				tasks, types = append(tasks, Task{ClaimedTask: ct, expiredOnly: true}), append(types, typ)
			})
	})
	if err != nil {
		if ctx.Err() == nil {
			a.d.Log.Warn().Err(err).Msg("sweep async attempts failed")
		}
		return
	}
	for i, t := range tasks {
		a.finishActivity(ctx, t, nil, errors.New(types[i]), types[i])
	}
}
