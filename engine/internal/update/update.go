// Package update performs updates (issue 44): a request into a running
// workflow that its validator may refuse, and that its handler answers.
//
// It adds no mechanism of its own to the engine's (design-notes,
// "Operating running workflows"): an update is validated by a query (the
// state cache or a replay; nothing is written), accepted as a keyed
// system signal (harvest.UpdateSignal keyed harvest.UpdateKeyPrefix + its
// id, whose dedup is per continue-as-new chain), and answered by the
// UpdateCompleted event the handler's return appends. A retried id is
// answered from that event, or waits for it, and is never validated
// again: the dedup lookups come first and are read-only.
package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Deps is what the updater uses; the engine fills it.
type Deps struct {
	Pool   store.Querier
	Get    func(ctx context.Context, id uuid.UUID) (shardapi.Execution, error)
	Query  func(ctx context.Context, id uuid.UUID, name string, args json.RawMessage) (json.RawMessage, error)
	Signal func(ctx context.Context, req shardapi.SignalRequest) (shardapi.SignalResult, error)
	// Poll is how often a waiting request looks for its result.
	Poll time.Duration
}

// Request is one update: the run (any run of its chain), the update's
// name, id and arguments, and how long to wait for its result.
type Request struct {
	ExecutionID uuid.UUID
	Name        string
	UpdateID    string
	Args        json.RawMessage
	Wait        time.Duration
}

// Result is an update's answer. Completed is false when the update was
// accepted and not answered within the wait: ask again with its id.
type Result struct {
	UpdateID string
	// ExecutionID is the run that answered it (while pending: the run it
	// was addressed to).
	ExecutionID uuid.UUID
	Completed   bool
	Output      json.RawMessage
	Error       *harvest.ErrorInfo
}

// Updater performs updates.
type Updater struct{ d Deps }

// New makes an updater.
func New(d Deps) *Updater { return &Updater{d: d} }

// Update performs req: an answered id returns its result; an id accepted
// already waits for it; a new one is validated, accepted and waited for.
// Errors: harvest.ErrUnknownUpdate (no handler registered under the name
// at the run's current point), harvest.ErrUpdateArgs (the arguments do
// not decode), a *harvest.UpdateRejectedError, a *shardapi.TerminalError
// (the chain closed before answering), or the query's and signal's own.
func (u *Updater) Update(ctx context.Context, req Request) (Result, error) {
	if res, ok, err := u.answered(ctx, req); ok || err != nil {
		return res, err
	}
	accepted, err := store.SignalKeySeen(ctx, u.d.Pool, req.ExecutionID, harvest.UpdateKeyPrefix+req.UpdateID)
	if err != nil {
		return Result{}, err
	}
	if !accepted {
		if err := u.accept(ctx, req); err != nil {
			return Result{}, err
		}
	}
	return u.wait(ctx, req)
}

// answered looks the update's result up in the run's chain.
func (u *Updater) answered(ctx context.Context, req Request) (Result, bool, error) {
	run, data, ok, err := store.UpdateResult(ctx, u.d.Pool, req.ExecutionID, req.UpdateID)
	if !ok || err != nil {
		return Result{}, false, err
	}
	var d harvest.UpdateCompletedData
	if err := json.Unmarshal(data, &d); err != nil {
		return Result{}, false, fmt.Errorf("decode UpdateCompleted of %s: %w", req.UpdateID, err)
	}
	return Result{UpdateID: req.UpdateID, ExecutionID: run, Completed: true, Output: d.Output, Error: d.Error}, true, nil
}

// accept validates the update on the run's current state and sends it.
func (u *Updater) accept(ctx context.Context, req Request) error {
	x, err := u.current(ctx, req.ExecutionID)
	if err != nil {
		return err
	}
	if shardapi.IsTerminal(x.State) {
		return &shardapi.TerminalError{ExecutionID: x.ExecutionID.String(), State: x.State}
	}
	if err := u.validate(ctx, x.ExecutionID, req); err != nil {
		return err
	}
	payload, err := json.Marshal(harvest.UpdateRequest{UpdateID: req.UpdateID, Name: req.Name, Args: req.Args})
	if err != nil {
		return err
	}
	_, err = u.d.Signal(ctx, shardapi.SignalRequest{ExecutionID: x.ExecutionID, SignalName: harvest.UpdateSignal,
		Payload: payload, IdempotencyKey: harvest.UpdateKeyPrefix + req.UpdateID})
	return err
}

// validate runs the update's validator, a query, on run id.
func (u *Updater) validate(ctx context.Context, id uuid.UUID, req Request) error {
	_, err := u.d.Query(ctx, id, harvest.UpdateQueryPrefix+req.Name, req.Args)
	switch {
	case errors.Is(err, harvest.ErrUnknownQuery):
		return fmt.Errorf("update %q of %s: %w", req.Name, id, harvest.ErrUnknownUpdate)
	case errors.Is(err, harvest.ErrQueryArgs):
		return fmt.Errorf("update %q of %s: %w", req.Name, id, harvest.ErrUpdateArgs)
	}
	return err
}

// firstLook is the first pause of a waiting request; each next one
// doubles, up to Deps.Poll: a handler that runs no long effect answers
// within a few of them.
const firstLook = 5 * time.Millisecond

// wait polls for the update's result until the wait ends (a pending
// result) or the chain closes without it (its terminal error).
func (u *Updater) wait(ctx context.Context, req Request) (Result, error) {
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	deadline := time.Now().Add(req.Wait)
	for step := firstLook; ; step = min(2*step, u.d.Poll) {
		if res, ok, err := u.answered(ctx, req); ok || err != nil {
			return res, err
		}
		x, err := u.current(ctx, req.ExecutionID)
		if err != nil {
			return Result{}, err
		}
		if shardapi.IsTerminal(x.State) {
			return u.closed(ctx, req, x)
		}
		if !time.Now().Before(deadline) {
			return Result{UpdateID: req.UpdateID, ExecutionID: req.ExecutionID}, nil
		}
		pause.Reset(min(step, time.Until(deadline)))
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-pause.C:
		}
	}
}

// closed answers an update whose chain closed: with its result if the
// close came after it, else with the terminal error.
func (u *Updater) closed(ctx context.Context, req Request, x shardapi.Execution) (Result, error) {
	if res, ok, err := u.answered(ctx, req); ok || err != nil {
		return res, err
	}
	return Result{}, &shardapi.TerminalError{ExecutionID: x.ExecutionID.String(), State: x.State}
}

// current is the chain's last run: id's, or its successors' (a
// continue-as-new's, a reset's).
func (u *Updater) current(ctx context.Context, id uuid.UUID) (shardapi.Execution, error) {
	for {
		x, err := u.d.Get(ctx, id)
		if err != nil || x.ContinuedTo == nil {
			return x, err
		}
		id = *x.ContinuedTo
	}
}
