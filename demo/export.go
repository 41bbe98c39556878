package demo

import (
	"time"

	"github.com/harvestd/harvest"
)

// The export: a workflow under a concurrency limit counted across the
// cluster (see the README's "Flow control"). At most ExportMaxRunning
// exports of one tenant (the input's /tenant) run at once on the whole
// cluster, whatever shards their runs are placed on: each run waits
// QUEUED until the tenant's keeper grants it a slot. An export sleeps
// ExportInput.SleepMS (default 5 s), then completes.
const (
	ExportName       = "export"
	ExportMaxRunning = 2
)

// ExportInput is the export's input.
type ExportInput struct {
	Tenant  string `json:"tenant"`
	SleepMS int64  `json:"sleep_ms,omitempty"`
}

func newExport() *harvest.Workflow[ExportInput, string] {
	return harvest.NewWorkflow(ExportName, func(ctx harvest.Context, in ExportInput) (string, error) {
		if err := harvest.Sleep(ctx, msOr(in.SleepMS, 5*time.Second)); err != nil {
			return "", err
		}
		return "export for " + in.Tenant, nil
	}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: ExportMaxRunning, KeyPointer: "/tenant", Scope: harvest.ScopeCluster})
}
