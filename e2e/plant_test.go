package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// newExecID mints an execution id of shard (its first two bytes).
func newExecID(shard uint16) string {
	id := uuid.New()
	id[0], id[1] = byte(shard>>8), byte(shard)
	return id.String()
}

// plantDB makes an empty migrated database for a synthetic world and
// connects to it (closed when the test ends).
func plantDB(ctx context.Context, t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.NewDB(t)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return dsn, conn
}

// plantExecution inserts a closed execution with a one-event history.
func plantExecution(ctx context.Context, conn *pgx.Conn, id, name, wfID, key, state string) error {
	var ik any
	if key != "" {
		ik = key
	}
	if _, err := conn.Exec(ctx, `
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, holds_slot, idempotency_key, next_event_id)
		VALUES ($1, $2, $3, $4, false, $5, 1)`, id, name, wfID, state, ik); err != nil {
		return fmt.Errorf("plant execution: %w", err)
	}
	_, err := conn.Exec(ctx, `INSERT INTO harvest_events (execution_id, event_id, event_type, data)
		VALUES ($1, 0, 'WorkflowStarted', jsonb_build_object('workflow_name', $2::text, 'workflow_id', $3::text))`, id, name, wfID)
	return err
}

// plantSignal appends a keyed SignalReceived to an execution's history
// (keeping it dense), as a broken signal dedup would.
func plantSignal(ctx context.Context, conn *pgx.Conn, execID, key string) error {
	_, err := conn.Exec(ctx, `
		WITH x AS (UPDATE harvest_executions SET next_event_id = next_event_id + 1
		            WHERE execution_id = $1 RETURNING next_event_id - 1 AS ev)
		INSERT INTO harvest_events (execution_id, event_id, event_type, data)
		SELECT $1, ev, 'SignalReceived', jsonb_build_object('signal_name', 'approved', 'payload', null, 'idempotency_key', $2::text) FROM x`,
		execID, key)
	return err
}

// plantEvent appends an event of type typ with data to an execution's
// history, keeping it dense.
func plantEvent(ctx context.Context, conn *pgx.Conn, execID, typ string, data map[string]any) error {
	_, err := conn.Exec(ctx, `
		WITH x AS (UPDATE harvest_executions SET next_event_id = next_event_id + 1
		            WHERE execution_id = $1 RETURNING next_event_id - 1 AS ev)
		INSERT INTO harvest_events (execution_id, event_id, event_type, data)
		SELECT $1, ev, $2::text, $3::jsonb FROM x`, execID, typ, data)
	if err != nil {
		return fmt.Errorf("plant %s: %w", typ, err)
	}
	return nil
}

// selfTestChecker plants one violation of each kind the databases can show
// (a second execution for an answered start key, a second SignalReceived
// for an answered signal key, an answer naming a missing execution, a
// second WorkflowCancelRequested when a cancel was answered
// newly_cancelled, a doubled add and a fork in a counter chain, two
// overlapping activity slots of one key, …) and checks that the checker
// reports each.
func selfTestChecker(ctx context.Context, ops []*Op, dsns map[uint16]string) error {
	var start, signal, cancel, counter *Op
	for _, op := range ops {
		switch {
		case op.OK && op.Kind == KindStart && op.Workflow == wfCounter && counter == nil:
			counter = op
		case op.OK && op.Kind == KindCancel && op.NewlyCancelled != nil && *op.NewlyCancelled && cancel == nil:
			cancel = op
		case op.OK && op.Kind == KindStart && !op.Probe && start == nil:
			start = op
		case op.OK && op.Kind == KindSignal && signal == nil:
			signal = op
		}
	}
	if start == nil || signal == nil {
		return fmt.Errorf("no answered start and signal to plant violations on")
	}
	ctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	type plant struct {
		shard uint16
		do    func(*pgx.Conn) error
	}
	want := []string{CheckStartDedup, CheckSignalOnce, CheckAckedExists}
	plants := []plant{
		{shardOf(start.ExecID), func(c *pgx.Conn) error {
			s := shardOf(start.ExecID)
			return plantExecution(ctx, c, newExecID(s), start.Workflow, "planted-dup", start.Key, "COMPLETED")
		}},
		{shardOf(signal.ExecID), func(c *pgx.Conn) error { return plantSignal(ctx, c, signal.ExecID, signal.Key) }},
	}
	if cancel != nil {
		want = append(want, CheckCancelOnce)
		plants = append(plants, plant{shardOf(cancel.Target), func(c *pgx.Conn) error {
			return plantEvent(ctx, c, cancel.Target, "WorkflowCancelRequested", map[string]any{"reason": "planted"})
		}})
	}
	if counter != nil {
		want = append(want, CheckChainSignals, CheckChainLinks)
		plants = append(plants, plant{shardOf(counter.ExecID), func(c *pgx.Conn) error { return plantChainFaults(ctx, c, counter.ExecID) }})
	}
	if hasSchedules(ops) {
		shard, err := scheduledShard(ctx, dsns)
		if err != nil {
			return err
		}
		want = append(want, CheckScheduleOnce)
		plants = append(plants, plant{shard, func(c *pgx.Conn) error { return plantScheduleDup(ctx, c, shard) }})
	}
	if batch := answeredBatch(ops); batch != nil {
		want = append(want, CheckDeferredOnce, CheckDeferredInput)
		plants = append(plants, plant{shardOf(batch.DeferredID), func(c *pgx.Conn) error { return plantDeferredFaults(ctx, c, dsns, batch) }})
	}
	if delivery := answeredDelivery(ops, wfChild); delivery != nil {
		want = append(want, CheckWebhookOnce)
		plants = append(plants, plant{shardOf(delivery.ExecID), func(c *pgx.Conn) error {
			return plantWebhookDup(ctx, c, delivery)
		}})
	}
	if delivery := answeredDelivery(ops, wfCounter); delivery != nil {
		// A second run of a counter's workflow id, as a redelivery after
		// it completed that missed the key's scope would start.
		want = append(want, CheckWebhookSWS)
		plants = append(plants, plant{shardOf(delivery.ExecID), func(c *pgx.Conn) error {
			return plantExecution(ctx, c, newExecID(shardOf(delivery.ExecID)), wfCounter, delivery.WorkflowID, "", "COMPLETED")
		}})
	}
	if report := answeredReport(ops); report != nil {
		// Two attempts of one customer's render_report holding their
		// slots for the same two hours, as a claim that passed over the
		// limit would leave them.
		want = append(want, CheckActivityFlowLimit)
		plants = append(plants, plant{shardOf(report.ExecID), func(c *pgx.Conn) error { return plantSlotOverlap(ctx, c, report) }})
	}
	if exportShards := slices.Sorted(maps.Keys(dsns)); answeredExport(ops) && len(exportShards) > 1 {
		// Three exports of one tenant holding slots for the same two
		// hours, two on one shard and one on another: within a limit of
		// two per shard, over the limit of two on all shards together.
		want = append(want, CheckClusterFlowLimit)
		for i, shard := range []uint16{exportShards[0], exportShards[0], exportShards[1]} {
			plants = append(plants, plant{shard, func(c *pgx.Conn) error { return plantExportSlot(ctx, c, shard, i) }})
		}
	}
	for _, p := range plants {
		conn, err := pgx.Connect(ctx, dsns[p.shard])
		if err != nil {
			return err
		}
		err = p.do(conn)
		conn.Close(ctx)
		if err != nil {
			return err
		}
	}
	st, err := ReadDB(ctx, dsns)
	if err != nil {
		return err
	}
	lost := *start
	lost.ID, lost.Key, lost.ExecID = 1<<40, "planted-lost-ack", newExecID(shardOf(start.ExecID))
	vs := Check(append(ops, &lost), st)
	got := map[string]int{}
	for _, v := range vs {
		got[v.Check]++
	}
	for _, c := range want {
		if got[c] == 0 {
			return fmt.Errorf("planted a %q violation, the checker did not report it (it reported %v)", c, got)
		}
	}
	return nil
}

// answeredReport is an answered start of a report, nil when none was.
func answeredReport(ops []*Op) *Op {
	for _, op := range ops {
		if op.OK && op.Kind == KindStart && op.Workflow == wfReport && op.ExecID != "" {
			return op
		}
	}
	return nil
}

// plantSlotOverlap plants, in the report's history, two outcomes of
// render_report attempts whose slots of its customer overlap.
func plantSlotOverlap(ctx context.Context, c *pgx.Conn, report *Op) error {
	now := time.Now().UTC()
	slot := map[string]any{"key": reportInput(report.Key)["customer"], "since": now.Add(-time.Hour), "until": now.Add(time.Hour)}
	for _, id := range []string{"planted-1", "planted-2"} {
		if err := plantEvent(ctx, c, report.ExecID, "ActivityCompleted", map[string]any{"activity_id": id, "slot": slot}); err != nil {
			return err
		}
	}
	return nil
}

// answeredExport reports whether an export's start was answered.
func answeredExport(ops []*Op) bool {
	return slices.ContainsFunc(ops, func(op *Op) bool { return op.OK && op.Kind == KindStart && op.Workflow == wfExport })
}

// plantExportSlot plants a completed export of tenant planted, which held
// its slot from an hour ago to an hour from now.
func plantExportSlot(ctx context.Context, c *pgx.Conn, shard uint16, i int) error {
	id := newExecID(shard)
	if err := plantExecution(ctx, c, id, wfExport, fmt.Sprint("planted-export-", i), "", "COMPLETED"); err != nil {
		return err
	}
	_, err := c.Exec(ctx, `UPDATE harvest_executions SET flow_key = 'planted', flow_since = now() - interval '1 hour',
		completed_at = now() + interval '1 hour' WHERE execution_id = $1`, id)
	return err
}

// hasSchedules reports whether the workload created a schedule.
func hasSchedules(ops []*Op) bool {
	for _, op := range ops {
		if op.Kind == KindSchedule {
			return true
		}
	}
	return false
}

// scheduledShard is a shard holding a schedule's run.
func scheduledShard(ctx context.Context, dsns map[uint16]string) (uint16, error) {
	for shard, dsn := range dsns {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return 0, err
		}
		var n int
		err = conn.QueryRow(ctx, `SELECT count(*) FROM harvest_executions WHERE idempotency_key LIKE 'hv:sched:%'`).Scan(&n)
		conn.Close(ctx)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			return shard, nil
		}
	}
	return 0, fmt.Errorf("the workload created schedules, and no shard holds a run of one")
}

// plantScheduleDup plants a second run of a schedule fire's key, as a
// fire performed twice without its key would leave it.
func plantScheduleDup(ctx context.Context, conn *pgx.Conn, shard uint16) error {
	var key, name, wfID string
	if err := conn.QueryRow(ctx, `SELECT idempotency_key, workflow_name, workflow_id FROM harvest_executions
		 WHERE idempotency_key LIKE 'hv:sched:%' LIMIT 1`).Scan(&key, &name, &wfID); err != nil {
		return fmt.Errorf("find a schedule's run: %w", err)
	}
	return plantExecution(ctx, conn, newExecID(shard), name, wfID, key, "COMPLETED")
}

// answeredBatch is a batch start answered at its first attempt (its
// input is in its item for sure).
func answeredBatch(ops []*Op) *Op {
	for _, op := range ops {
		if op.OK && op.Kind == KindBatch && len(op.Attempts) == 1 {
			return op
		}
	}
	return nil
}

// plantDeferredFaults plants a second run of the key of op's item (in the
// shard of the item's run), as a fire performed twice without its key
// would leave it, and drops op's input from the item and its run, as a
// lost batch input would leave them. conn is the item's shard.
func plantDeferredFaults(ctx context.Context, conn *pgx.Conn, dsns map[uint16]string, op *Op) error {
	var run string
	if err := conn.QueryRow(ctx, `
		UPDATE harvest_deferred SET starts = starts - 1,
		       input = coalesce((SELECT jsonb_agg(e ORDER BY o) FROM jsonb_array_elements(input) WITH ORDINALITY AS t(e, o)
		                          WHERE e->>'token' <> $2), '[]'::jsonb)
		 WHERE deferred_id = $1 RETURNING coalesce(execution_id::text, '')`, op.DeferredID, deferredToken(op.ID, 0)).Scan(&run); err != nil {
		return fmt.Errorf("drop a batch input: %w", err)
	}
	if run == "" {
		return fmt.Errorf("batch item %s records no run", op.DeferredID)
	}
	rc, err := pgx.Connect(ctx, dsns[shardOf(run)])
	if err != nil {
		return err
	}
	defer rc.Close(ctx)
	var name, wfID, key string
	if err := rc.QueryRow(ctx, `SELECT workflow_name, workflow_id, idempotency_key FROM harvest_executions WHERE execution_id = $1`,
		run).Scan(&name, &wfID, &key); err != nil {
		return fmt.Errorf("find batch run %s: %w", run, err)
	}
	if _, err := rc.Exec(ctx, `UPDATE harvest_executions SET input = coalesce((SELECT jsonb_agg(e ORDER BY o)
		  FROM jsonb_array_elements(input) WITH ORDINALITY AS t(e, o) WHERE e->>'token' <> $2), '[]'::jsonb)
		 WHERE execution_id = $1`, run, deferredToken(op.ID, 0)); err != nil {
		return fmt.Errorf("drop a batch run's input: %w", err)
	}
	return plantExecution(ctx, rc, newExecID(shardOf(run)), name, wfID, key, "COMPLETED")
}

// answeredDelivery is an answered webhook delivery to the receiver of
// workflow.
func answeredDelivery(ops []*Op, workflow string) *Op {
	for _, op := range ops {
		if op.OK && op.Kind == KindWebhook && op.Workflow == workflow {
			return op
		}
	}
	return nil
}

// plantWebhookDup plants a second run of a delivery's key, with its
// payload, as a redelivery that missed the key would leave it.
func plantWebhookDup(ctx context.Context, conn *pgx.Conn, op *Op) error {
	id := newExecID(shardOf(op.ExecID))
	if err := plantExecution(ctx, conn, id, op.Workflow, "planted-webhook-dup", webhookKeyPrefix+op.Key, "COMPLETED"); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, `UPDATE harvest_executions SET input = $2::jsonb WHERE execution_id = $1`, id, string(webhookPayload(op)))
	return err
}

// plantChainFaults doubles an add in the output of chain's last run and
// forks the chain: a second successor of its first run.
func plantChainFaults(ctx context.Context, conn *pgx.Conn, chain string) error {
	if _, err := conn.Exec(ctx, `
		UPDATE harvest_executions SET output = jsonb_set(output, '{ids}', (output->'ids') || (output->'ids'->0))
		 WHERE coalesce(chain_id, execution_id) = $1 AND continued_to IS NULL`, chain); err != nil {
		return fmt.Errorf("plant a doubled add: %w", err)
	}
	fork := newExecID(shardOf(chain))
	if err := plantExecution(ctx, conn, fork, wfCounter, "planted-fork", "", "COMPLETED"); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, `UPDATE harvest_executions SET chain_id = $1, continued_from = $1 WHERE execution_id = $2`, chain, fork)
	return err
}

// plantLink makes run a continue-as-new successor of from in chain (the
// chain's first run), as the engine's hand-over writes it; from closes
// CONTINUED_AS_NEW naming it.
func plantLink(ctx context.Context, conn *pgx.Conn, chain, from, run string) error {
	if _, err := conn.Exec(ctx, `UPDATE harvest_executions SET chain_id = $1, continued_from = $2 WHERE execution_id = $3`,
		chain, from, run); err != nil {
		return fmt.Errorf("plant link: %w", err)
	}
	_, err := conn.Exec(ctx, `UPDATE harvest_executions SET state = 'CONTINUED_AS_NEW', continued_to = $2 WHERE execution_id = $1`,
		from, run)
	return err
}

// plantOutput sets a run's output.
func plantOutput(ctx context.Context, conn *pgx.Conn, run string, output any) error {
	_, err := conn.Exec(ctx, `UPDATE harvest_executions SET output = $2 WHERE execution_id = $1`, run, output)
	return err
}
