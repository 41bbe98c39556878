package demo

import (
	"time"

	"github.com/harvestd/harvest"
)

// ApprovalRaceInput is the approval_race workflow's input.
type ApprovalRaceInput struct {
	// TimeoutMS is how long to wait for a decision (default 24 hours).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// AutoApproveMS is how long the auto_approve activity takes
	// (default 0: at once); negative: it answers only when cancelled.
	AutoApproveMS int64 `json:"auto_approve_ms,omitempty"`
}

// ApprovalRaceResult is the approval_race workflow's output.
type ApprovalRaceResult struct {
	// Winner is "signal", "activity" or "timeout".
	Winner string `json:"winner"`
	// By is who approved: the signal's By, or the activity's answer.
	By string `json:"by,omitempty"`
}

// approvalRace waits for whichever comes first: the "approved" signal,
// the auto_approve activity, or the timeout.
func (d *Demo) approvalRace(ctx harvest.Context, in ApprovalRaceInput) (out ApprovalRaceResult, err error) {
	auto := d.AutoApprove.Execute(ctx, in.AutoApproveMS)
	timeout := harvest.NewTimer(ctx, msOr(in.TimeoutMS, 24*time.Hour))
	harvest.NewSelector(ctx).
		AddReceive(Approved, func() {
			var a Approval
			a, err = Approved.Receive(ctx)
			out = ApprovalRaceResult{Winner: "signal", By: a.By}
		}).
		AddFuture(auto, func() {
			out.Winner = "activity"
			out.By, err = auto.Get(ctx)
		}).
		AddFuture(timeout, func() { out.Winner = "timeout" }).
		Select(ctx)
	return out, err
}

// autoApprove answers "auto" after ms milliseconds (never when ms < 0).
func autoApprove(ctx *harvest.ActivityContext, ms int64) (string, error) {
	var after <-chan time.Time // nil: never
	if ms >= 0 {
		after = time.After(time.Duration(ms) * time.Millisecond)
	}
	select {
	case <-after:
		return "auto", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
