package engine

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

// taskTokenPrefix starts every task token.
const taskTokenPrefix = "hvtt_"

// ParseTaskToken returns the execution a task token is for;
// ErrTaskToken when it is not one.
func ParseTaskToken(token string) (uuid.UUID, error) {
	rest, ok := strings.CutPrefix(token, taskTokenPrefix)
	idHex, secret, ok2 := strings.Cut(rest, "_")
	raw, err := hex.DecodeString(idHex)
	if !ok || !ok2 || err != nil || len(raw) != 16 || len(secret) != 64 {
		return uuid.Nil, ErrTaskToken
	}
	if _, err := hex.DecodeString(secret); err != nil {
		return uuid.Nil, ErrTaskToken
	}
	return uuid.UUID(raw), nil
}

func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// mintTaskToken makes the token of attempt t and stores its hash, if the
// attempt is still current.
func (e *Engine) mintTaskToken(ctx context.Context, t claimedTask) (string, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", fmt.Errorf("mint task token: %w", err)
	}
	token := taskTokenPrefix + hex.EncodeToString(t.ExecutionID[:]) + "_" + hex.EncodeToString(secret[:])
	err := e.withTx(ctx, func(tx *fence.Tx) error {
		inserted, err := store.InsertTaskToken(ctx, tx, hashToken(token), t.TaskID, t.Attempt)
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
func (e *Engine) markAsync(ctx context.Context, t claimedTask, left time.Duration) (bool, error) {
	hb := t.Options.WithDefaults().HeartbeatTimeout
	var marked bool
	err := e.withTx(ctx, func(tx *fence.Tx) error {
		var err error
		marked, err = store.MarkAsync(ctx, tx, t.TaskID, t.Attempt, micros(left), micros(hb))
		return err
	})
	return marked, err
}

// asyncTask is the attempt a token names, locked.
type asyncTask struct {
	claimedTask
	Status string
}

// CompleteActivity completes the attempt token names with out.
func (e *Engine) CompleteActivity(ctx context.Context, token string, out json.RawMessage) (AsyncAnswer, error) {
	return e.answerAsync(ctx, token, "completed", out, nil)
}

// FailActivity fails the attempt token names with info; the retry policy
// applies (a retryable failure makes a new attempt due).
func (e *Engine) FailActivity(ctx context.Context, token string, info harvest.ErrorInfo) (AsyncAnswer, error) {
	return e.answerAsync(ctx, token, "failed", nil, &harvest.ApplicationError{Type: info.Type, Message: info.Message,
		NonRetryable: info.NonRetryable, Details: info.Details})
}

// answerAsync records an answer to the attempt token names, in one
// transaction with the token's record: an unknown token is ErrTaskToken;
// the same answer again is a Duplicate (nothing appended, even after the
// run closed); another answer after one was accepted is ErrAnswered; a
// closed run is a *TerminalError and an attempt that is no longer current
// ErrStaleAttempt.
func (e *Engine) answerAsync(ctx context.Context, token, kind string, out json.RawMessage, runErr error) (AsyncAnswer, error) {
	var (
		ans AsyncAnswer
		res attemptOutcome
	)
	err := e.withTaskToken(ctx, token, func(tx *fence.Tx, id uuid.UUID, ex *store.Exec, tok *store.TaskToken) error {
		ans = AsyncAnswer{ExecutionID: id, ActivityID: tok.ActivityID, Attempt: tok.Attempt}
		switch {
		case tok.Answer != nil && *tok.Answer == kind:
			ans.Duplicate = true
			return nil
		case tok.Answer != nil:
			return fmt.Errorf("attempt %d of activity %s was %s: %w", tok.Attempt, tok.ActivityID, *tok.Answer, ErrAnswered)
		case IsTerminal(ex.State):
			return &TerminalError{ExecutionID: id.String(), State: ex.State}
		}
		t, err := lockAsyncTask(ctx, tx, tok.TaskID, ex)
		if err != nil {
			return err
		}
		if t == nil || t.Attempt != tok.Attempt || t.Status != "running" {
			return fmt.Errorf("attempt %d of activity %s: %w", tok.Attempt, tok.ActivityID, errStaleAttempt)
		}
		if err := store.RecordTokenAnswer(ctx, tx, hashToken(token), kind); err != nil {
			return fmt.Errorf("record task token answer: %w", err)
		}
		res, err = e.writeAsyncOutcome(ctx, tx, t.claimedTask, ex, out, runErr)
		ans.Retried = res.outcome == "retried"
		return err
	})
	if errors.Is(err, errStaleAttempt) {
		return AsyncAnswer{}, fmt.Errorf("%s: %w", strings.TrimSuffix(err.Error(), ": "+errStaleAttempt.Error()), ErrStaleAttempt)
	}
	if err != nil {
		return AsyncAnswer{}, err
	}
	e.afterOutcome(ctx, res)
	return ans, nil
}

// writeAsyncOutcome writes an attempt's outcome as recordOutcome does.
func (e *Engine) writeAsyncOutcome(ctx context.Context, tx *fence.Tx, t claimedTask, ex *store.Exec, out json.RawMessage, runErr error) (attemptOutcome, error) {
	var res attemptOutcome
	ev := harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{
		ActivityID: t.ActivityID, Output: runs.InputOrNull(out), Attempt: t.Attempt})
	res.outcome = "completed"
	if runErr != nil {
		info := harvest.ToErrorInfo(runErr)
		retried, delay, err := e.maybeRetry(ctx, tx, t, info, "")
		if err != nil || retried {
			res.outcome, res.retryIn = "retried", delay
			return res, err
		}
		ev, res.outcome = failureCommand(t, info, ""), "failed"
	}
	var err error
	res.fx, err = e.writeOutcome(ctx, tx, t, ex, ev)
	return res, err
}

// afterOutcome does what a recorded outcome asks: its metric, the retry's
// wake-up, what its event asks of the engine (the run's workflow task).
func (e *Engine) afterOutcome(ctx context.Context, res attemptOutcome) {
	if res.outcome != "" {
		metrics.ActivityAttempts.WithLabelValues(res.outcome).Inc()
	}
	if res.outcome == "retried" {
		e.retryWake.After(res.retryIn)
	}
	e.settle(ctx, res.fx, nil)
}

// HeartbeatActivity records a heartbeat of the attempt token names and
// pushes its heartbeat timeout back; CancelRequested says the workflow
// cancelled the activity (fail it then, or complete it).
func (e *Engine) HeartbeatActivity(ctx context.Context, token string, details json.RawMessage) (AsyncAnswer, error) {
	var ans AsyncAnswer
	err := e.withTaskToken(ctx, token, func(tx *fence.Tx, id uuid.UUID, ex *store.Exec, tok *store.TaskToken) error {
		ans = AsyncAnswer{ExecutionID: id, ActivityID: tok.ActivityID, Attempt: tok.Attempt}
		if IsTerminal(ex.State) {
			return &TerminalError{ExecutionID: id.String(), State: ex.State}
		}
		if tok.Answer != nil {
			return fmt.Errorf("attempt %d of activity %s was %s: %w", tok.Attempt, tok.ActivityID, *tok.Answer, ErrAnswered)
		}
		t, err := lockAsyncTask(ctx, tx, tok.TaskID, ex)
		if err != nil {
			return err
		}
		if t == nil || t.Attempt != tok.Attempt || t.Status != "running" {
			return fmt.Errorf("attempt %d of activity %s: %w", tok.Attempt, tok.ActivityID, ErrStaleAttempt)
		}
		hb := t.Options.WithDefaults().HeartbeatTimeout
		ans.CancelRequested, err = store.HeartbeatAsync(ctx, tx, t.TaskID, nullJSON(details), micros(hb))
		if err != nil {
			return fmt.Errorf("record heartbeat: %w", err)
		}
		return nil
	})
	return ans, err
}

// withTaskToken runs fn in a fenced transaction with the run and the
// token record of token locked: an unknown token is ErrTaskToken.
func (e *Engine) withTaskToken(ctx context.Context, token string, fn func(tx *fence.Tx, id uuid.UUID, ex *store.Exec, tok *store.TaskToken) error) error {
	if err := e.checkOwning(); err != nil {
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
		store.QueueLockTaskToken(b, hashToken(token), id, &tok)
	}
	return e.withFencedBatch(ctx, queue, func(tx *fence.Tx) error {
		if tok == nil || ex == nil {
			return ErrTaskToken
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
	t := &asyncTask{claimedTask: claimedTask{ClaimedTask: ct}, Status: status}
	t.WorkflowName, t.WorkflowID = ex.WorkflowName, ex.WorkflowID
	return t, nil
}

// sweepAsync (on every tick of the activity loop) records the timeout of
// every async attempt whose lock expired: schedule-to-close past its deadline, start-to-close past
// async_deadline, else the heartbeat timeout. The retry policy applies.
func (e *Engine) sweepAsync(ctx context.Context) {
	var tasks []claimedTask
	var types []string
	err := e.withTx(ctx, func(tx *fence.Tx) error {
		return store.ExpiredAsyncTasks(ctx, tx, micros(tx.Ahead()), TimeoutScheduleToClose, TimeoutStartToClose, TimeoutHeartbeat,
			func(ct store.ClaimedTask, typ string) {
				tasks, types = append(tasks, claimedTask{ClaimedTask: ct, expiredOnly: true}), append(types, typ)
			})
	})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn().Err(err).Msg("sweep async attempts failed")
		}
		return
	}
	for i, t := range tasks {
		e.finishActivity(ctx, t, nil, errors.New(types[i]), types[i])
	}
}
