package batchop

import (
	"cmp"
	"time"

	"github.com/harvestd/harvest"
)

// activityOptions are the batch activities': retried until they succeed
// (an item refused for good is counted, not an error), at most
// retryMax apart, so that a job goes on soon after a shard it needs is
// reachable again.
var activityOptions = harvest.ActivityOptions{StartToClose: 5 * time.Minute,
	Retry: &harvest.RetryPolicy{MaxAttempts: -1, InitialInterval: time.Second, BackoffCoefficient: 2, MaxInterval: retryMax}}

// retryMax is the longest wait between two attempts of a batch activity.
const retryMax = 10 * time.Second

// The workflow's declarations of the activities: Register registers
// their implementations under the same names.
var (
	listPage  = harvest.NewActivity(ListActivity, unregistered[ListRequest, Page], activityOptions)
	applyPage = harvest.NewActivity(ApplyActivity, unregistered[ApplyRequest, Counts], activityOptions)
	stop      = harvest.NewSignal[string](StopSignal)
)

// Workflow is the batch job: Register registers it with its activities.
var Workflow = harvest.NewWorkflow(WorkflowName, run).WithSignals(stop)

// run is one run of a job's chain: up to Pages pages, each listed, then
// performed, then paced to the job's rate; then a continue-as-new.
func run(ctx harvest.Context, job Job) (Progress, error) {
	job.JobID = cmp.Or(job.JobID, ctx.Info().ChainID)
	harvest.SetQueryHandler(ctx, ProgressQuery, func(struct{}) (Progress, error) { return job.Progress, nil })
	for range cmp.Or(job.Pages, RunPages) {
		began := ctx.Now()
		n, more, err := perform(ctx, &job)
		if err != nil {
			return job.Progress, err
		}
		if !more {
			job.Progress.Finished = true
			return job.Progress, nil
		}
		stopped, err := paceOrStop(ctx, pause(job.Rate, n, ctx.Now().Sub(began)))
		if err != nil || stopped {
			job.Progress.Stopped = stopped
			return job.Progress, err
		}
	}
	return job.Progress, harvest.ContinueAsNew(ctx, job)
}

// perform lists the page after the job's cursor and performs it: its
// runs, and whether a page follows.
func perform(ctx harvest.Context, job *Job) (int, bool, error) {
	page, err := listPage.Execute(ctx, ListRequest{Filter: job.Filter, Cursor: job.Cursor, Size: cmp.Or(job.Size, pageSize(job.Rate))}).Get(ctx)
	if err != nil {
		return 0, false, err
	}
	if len(page.Runs) > 0 {
		counts, err := applyPage.Execute(ctx, ApplyRequest{Job: job.JobID, Operation: job.Operation, Reason: job.Reason,
			SignalName: job.SignalName, SignalPayload: job.SignalPayload, ResetPoint: job.ResetPoint, Runs: page.Runs}).Get(ctx)
		if err != nil {
			return 0, false, err
		}
		job.Progress.add(counts)
	}
	job.Cursor = page.Next
	return len(page.Runs), page.Next != "", nil
}

// pause is what is left of n operations' share of a second at rate
// after took.
func pause(rate float64, n int, took time.Duration) time.Duration {
	return time.Duration(float64(n)/rate*float64(time.Second)) - took
}

// paceOrStop waits d (nothing when d <= 0) unless the stop signal comes
// first; it reports whether it came (before or during the wait).
func paceOrStop(ctx harvest.Context, d time.Duration) (bool, error) {
	if d <= 0 {
		_, got, err := stop.TryReceive(ctx)
		return got, err
	}
	_, got, err := stop.ReceiveWithTimeout(ctx, d)
	return got, err
}

// unregistered is the body of the workflow's activity declarations: the
// engine runs the registered implementations (Register), never these.
func unregistered[In, Out any](*harvest.ActivityContext, In) (Out, error) {
	var out Out
	return out, harvest.NewNonRetryableError("unregistered", "the batch activities are registered by batchop.Register")
}
