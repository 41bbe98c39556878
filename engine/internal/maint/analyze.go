package maint

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/store"
)

// Planner statistics of a young shard.
//
// The engine's statements are prepared once per connection and planned
// once (generic plans, see internal/pgpool). A plan made while a table
// was nearly empty reads it sequentially, and stays until the table is
// analysed; autovacuum analyses a table only after 10 % of it changed and
// visits each database once a minute by default, so a fresh shard would
// run its first minute on such plans. While a hot table is small (under
// analyzeYoungRows rows at its last analysis), the shard owner analyses
// it itself whenever it has changed by more rows than it had, which
// replaces the cached plans within seconds of every doubling.

const (
	// analyzeInterval is how often the owner checks its young tables.
	analyzeInterval = 2 * time.Second
	// analyzeYoungRows: tables larger than this are left to autovacuum.
	analyzeYoungRows = 1_000_000
	// analyzeMinChanges is the fewest changed rows worth an analysis.
	analyzeMinChanges = 200
	// analyzeStatisticsTarget sizes the sample (300 rows per unit) and the
	// statistics kept for each analysed column.
	analyzeStatisticsTarget = 10
)

// analyzedTables are the growing tables the engine's hot statements read.
// The queues (activity tasks, timers) stay small and churn: analysing
// them on every change would never end, and their polls avoid
// sequential scans themselves (claimActivities).
var analyzedTables = []string{
	"harvest_executions", "harvest_events", "harvest_start_idempotency", "harvest_signals",
}

// Analyzer analyses the shard's young tables (see above).
type Analyzer struct{ d Deps }

// NewAnalyzer makes the analyzer.
func NewAnalyzer(d Deps) *Analyzer { return &Analyzer{d: d} }

// Run analyses young tables that have doubled, until ctx ends. A failed
// pass is logged and the next tick tries again.
func (a *Analyzer) Run(ctx context.Context) {
	t := time.NewTicker(analyzeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.YoungTables(ctx); err != nil && ctx.Err() == nil {
			a.d.Log.Debug().Err(err).Msg("young table analysis failed")
		}
	}
}

// YoungTables runs ANALYZE on the hot tables that are young and have
// changed by more rows than they had when last analysed.
func (a *Analyzer) YoungTables(ctx context.Context) error {
	due, err := store.YoungTables(ctx, a.d.Pool, analyzedTables, analyzeYoungRows, analyzeMinChanges)
	if err != nil || len(due) == 0 {
		return err
	}
	err = pgx.BeginFunc(ctx, a.d.Pool, func(tx pgx.Tx) error {
		return store.Analyze(ctx, tx, due, analyzeStatisticsTarget)
	})
	if err != nil {
		return err
	}
	a.d.Log.Debug().Strs("tables", due).Msg("young tables analysed")
	return nil
}
