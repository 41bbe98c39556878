package batchop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Cluster is what the batch activities act on: the runs of every shard
// (the engine's Outbound). List answers one consistent page of the whole
// cluster or an error (a partial page would skip runs).
type Cluster interface {
	List(ctx context.Context, q shardapi.ListQuery) (shardapi.ListPage, error)
	Terminate(ctx context.Context, id uuid.UUID, reason string) (shardapi.CloseResult, error)
	Cancel(ctx context.Context, id uuid.UUID, reason string) (shardapi.CloseResult, error)
	Signal(ctx context.Context, req shardapi.SignalRequest) (shardapi.SignalResult, error)
	Reset(ctx context.Context, req shardapi.ResetRequest) (shardapi.ResetResult, error)
}

// ListRequest is a page to list: the runs Filter matches after Cursor,
// oldest first, at most Size.
type ListRequest struct {
	Filter Filter `json:"filter"`
	Cursor string `json:"cursor,omitempty"`
	Size   int    `json:"size"`
}

// Page is a listed page: its runs' execution ids, and the cursor after
// it ("" for the last page).
type Page struct {
	Runs []string `json:"runs"`
	Next string   `json:"next,omitempty"`
}

// ApplyRequest is a page to perform.
type ApplyRequest struct {
	Job           string          `json:"job"`
	Operation     Operation       `json:"operation"`
	Reason        string          `json:"reason,omitempty"`
	SignalName    string          `json:"signal_name,omitempty"`
	SignalPayload json.RawMessage `json:"signal_payload,omitempty"`
	ResetPoint    string          `json:"reset_point,omitempty"`
	Runs          []string        `json:"runs"`
}

// Counts are a performed page's (see Progress).
type Counts struct {
	Done      int64  `json:"done"`
	Skipped   int64  `json:"skipped"`
	Failed    int64  `json:"failed"`
	LastError string `json:"last_error,omitempty"`
}

// parallel is how many of a page's items are performed at once.
const parallel = 16

// Register registers the batch workflow, and the declarations of its
// activities (a Runner runs them), in reg, unless they are there already
// (a node's engines share one registry).
func Register(reg *harvest.Registry) error {
	if reg.HasWorkflow(WorkflowName) {
		return nil
	}
	if err := reg.Register(Workflow, listPage, applyPage); err != nil && !reg.HasWorkflow(WorkflowName) {
		return fmt.Errorf("register the batch workflow: %w", err)
	}
	return nil
}

// ActivityRunner runs an activity attempt by name (the engine's).
type ActivityRunner interface {
	RunActivity(ctx *harvest.ActivityContext, name string, input json.RawMessage) (json.RawMessage, error)
}

// Runner runs the batch activities on its engine's Cluster, and every
// other activity with the runner it wraps: each engine acts on its own
// cluster, whatever registry its engines share.
type Runner struct {
	own  *harvest.Registry
	next ActivityRunner
}

// NewRunner returns the runner of the batch activities on c, wrapping next.
func NewRunner(c Cluster, next ActivityRunner) (*Runner, error) {
	a := activities{c: c}
	own := harvest.NewRegistry()
	if err := own.Register(harvest.NewActivity(ListActivity, a.list, activityOptions),
		harvest.NewActivity(ApplyActivity, a.apply, activityOptions)); err != nil {
		return nil, fmt.Errorf("register the batch activities: %w", err)
	}
	return &Runner{own: own, next: next}, nil
}

// RunActivity runs a batch activity, or hands the attempt on.
func (r *Runner) RunActivity(ctx *harvest.ActivityContext, name string, input json.RawMessage) (json.RawMessage, error) {
	if r.own.HasActivity(name) {
		return r.own.RunActivity(ctx, name, input)
	}
	return r.next.RunActivity(ctx, name, input)
}

type activities struct{ c Cluster }

// list lists a page.
func (a activities) list(ctx *harvest.ActivityContext, r ListRequest) (Page, error) {
	q := shardapi.ListQuery{WorkflowName: r.Filter.WorkflowName, WorkflowID: r.Filter.WorkflowID,
		WorkflowIDPrefix: r.Filter.WorkflowIDPrefix, States: r.Filter.States,
		PageSize: r.Size, Cursor: r.Cursor, Ascending: true}
	if r.Filter.StartedAfter != nil {
		q.StartedAfter = *r.Filter.StartedAfter
	}
	if r.Filter.StartedBefore != nil {
		q.StartedBefore = *r.Filter.StartedBefore
	}
	p, err := a.c.List(ctx, q)
	switch {
	case shardapi.IsDefinite(err):
		return Page{}, harvest.NewNonRetryableError("batch_list_refused", err.Error())
	case err != nil:
		return Page{}, err
	}
	out := Page{Runs: make([]string, len(p.Workflows)), Next: p.NextCursor}
	for i, x := range p.Workflows {
		out.Runs[i] = x.ExecutionID.String()
	}
	return out, nil
}

// apply performs a page, parallel items at a time. An item that may
// succeed later (an unreachable owner) fails the attempt, which is
// retried whole: every item is idempotent.
func (a activities) apply(ctx *harvest.ActivityContext, r ApplyRequest) (Counts, error) {
	outcomes := make([]outcome, len(r.Runs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, run := range r.Runs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			outcomes[i] = a.item(ctx, r, run)
		})
	}
	wg.Wait()
	var c Counts
	for _, o := range outcomes {
		if err := c.count(o); err != nil {
			return Counts{}, err
		}
	}
	return c, nil
}

// outcome is one item's: done, skipped, or an error (definite: failed).
type outcome struct {
	done bool
	err  error
}

// count adds o to c, or returns its error when it is not definite.
func (c *Counts) count(o outcome) error {
	var terminal *shardapi.TerminalError
	switch {
	case o.err == nil && o.done:
		c.Done++
	case o.err == nil, errors.As(o.err, &terminal):
		c.Skipped++
	case shardapi.IsDefinite(o.err):
		c.Failed++
		c.LastError = o.err.Error()
	default:
		return o.err
	}
	return nil
}

// item performs the operation on one run.
func (a activities) item(ctx context.Context, r ApplyRequest, run string) outcome {
	id, err := uuid.Parse(run)
	if err != nil {
		return outcome{err: fmt.Errorf("run %q: %w", run, shardapi.ErrInvalidArgument)}
	}
	switch r.Operation {
	case Terminate:
		res, err := a.c.Terminate(ctx, id, r.Reason)
		return outcome{done: err == nil && res.State == shardapi.StateTerminated, err: err}
	case Cancel:
		_, err := a.c.Cancel(ctx, id, r.Reason)
		return outcome{done: err == nil, err: err}
	case Signal:
		_, err := a.c.Signal(ctx, shardapi.SignalRequest{ExecutionID: id, SignalName: r.SignalName, Payload: r.SignalPayload,
			IdempotencyKey: ItemKey(r.Job, run)})
		return outcome{done: err == nil, err: err}
	case Reset:
		_, err := a.c.Reset(ctx, shardapi.ResetRequest{ExecutionID: id, Point: r.ResetPoint, Reason: r.Reason,
			IdempotencyKey: ItemKey(r.Job, run)})
		return outcome{done: err == nil, err: err}
	}
	return outcome{err: fmt.Errorf("operation %q: %w", r.Operation, shardapi.ErrInvalidArgument)}
}
