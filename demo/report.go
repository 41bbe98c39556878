package demo

import (
	"time"

	"github.com/harvestd/harvest"
)

// The report: a workflow under a concurrency limit (see the README's
// "Flow control"). At most ReportMaxRunning reports of one customer run
// at once (the limit is keyed by the input's /customer); the others wait
// QUEUED. A report sleeps ReportInput.SleepMS (default 5 s), then
// renders itself with the activity render_report, of which one attempt
// per customer runs at once (an activity under a concurrency limit).
const (
	ReportName       = "report"
	ReportMaxRunning = 2
	RenderReportName = "render_report"
)

// ReportInput is the report's input.
type ReportInput struct {
	Customer string `json:"customer"`
	SleepMS  int64  `json:"sleep_ms,omitempty"`
}

func newReport(render *harvest.Activity[ReportInput, string]) *harvest.Workflow[ReportInput, string] {
	return harvest.NewWorkflow(ReportName, func(ctx harvest.Context, in ReportInput) (string, error) {
		if err := harvest.Sleep(ctx, msOr(in.SleepMS, 5*time.Second)); err != nil {
			return "", err
		}
		return render.Execute(ctx, in).Get(ctx)
	}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: ReportMaxRunning, KeyPointer: "/customer"})
}

func newRenderReport() *harvest.Activity[ReportInput, string] {
	return harvest.NewActivity(RenderReportName, func(_ *harvest.ActivityContext, in ReportInput) (string, error) {
		return "report for " + in.Customer, nil
	}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1, KeyPointer: "/customer"})
}
