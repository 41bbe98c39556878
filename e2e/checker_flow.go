package e2e

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Flow control (workload_flow.go). Per shard and concurrency key, the
// runs that held slots at once never exceed the limit: each run's slot is
// bounded by flow_since (taken) and completed_at (given back; still held
// for a run not closed). The report's limit is counted per shard, so a
// key's runs on two shards are checked apart; the export's across the
// cluster, so its runs on every shard are counted together. Each key of
// the export has one keeper chain, whose last run runs (a keeper never
// completes). That every report and export completed after the heal
// (nothing left QUEUED or RUNNING: no slot leaked) is CheckCompleted's.

// Check names of the flow part: the reports' slots, and the slots of
// their render_report attempts (demo.RenderReportName, one per customer
// at once), which the events recording the attempts' outcomes carry
// (harvest.ActivitySlot).
const (
	CheckFlowLimit         = "concurrency key -> at most its limit running at once"
	CheckActivityFlowLimit = "activity concurrency key -> at most its limit of attempts at once"
	CheckClusterFlowLimit  = "cluster concurrency key -> at most its limit running at once on every shard"
	activityRender         = "render_report"
	renderMax              = 1
)

// slotRow is one limited run's hold of a slot.
type slotRow struct {
	shard       uint16
	id, name    string
	key         string
	created     time.Time
	since, till time.Time // till zero: still held
}

// readSlots reads the report and export runs' slots of one shard.
func (st *DBState) readSlots(ctx context.Context, shard uint16, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT execution_id::text, workflow_name, flow_key, created_at, flow_since, completed_at
		  FROM harvest_executions
		 WHERE workflow_name = ANY($1) AND flow_key IS NOT NULL AND flow_since IS NOT NULL`, []string{wfReport, wfExport})
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r := &slotRow{shard: shard}
		var till *time.Time
		if err := rows.Scan(&r.id, &r.name, &r.key, &r.created, &r.since, &till); err != nil {
			return err
		}
		if till != nil {
			r.till = *till
		}
		st.slots = append(st.slots, r)
	}
	return rows.Err()
}

// readActivitySlots reads the slots the reports' activity attempts held,
// from the events that recorded their outcomes.
func (st *DBState) readActivitySlots(ctx context.Context, shard uint16, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT e.execution_id::text, e.data->'slot'->>'key', x.created_at,
		       (e.data->'slot'->>'since')::timestamptz, (e.data->'slot'->>'until')::timestamptz
		  FROM harvest_events e JOIN harvest_executions x ON x.execution_id = e.execution_id
		 WHERE x.workflow_name = $1 AND e.data ? 'slot'
		   AND e.event_type IN ('ActivityCompleted', 'ActivityFailed', 'ActivityTimedOut')`, wfReport)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r := &slotRow{shard: shard, name: activityRender}
		if err := rows.Scan(&r.id, &r.key, &r.created, &r.since, &r.till); err != nil {
			return err
		}
		st.activitySlots = append(st.activitySlots, r)
	}
	return rows.Err()
}

// slotKey is a concurrency key of one shard.
type slotKey struct {
	shard     uint16
	name, key string
}

// checkFlow reports every key of a shard whose runs held more than
// reportMax slots at once, or whose render_report attempts more than
// renderMax, and every completed report whose render_report completion
// recorded no slot.
func checkFlow(st *DBState, add func(check, format string, args ...any)) {
	reports, exports := byWorkflow(st.slots, wfReport), allShards(byWorkflow(st.slots, wfExport))
	overLimit(exports, exportMax, func(k slotKey, most int, at time.Time) {
		add(CheckClusterFlowLimit, "%s key %q: %d runs held slots at %s on all shards together (limit %d)", k.name, k.key, most,
			at.Format(time.RFC3339Nano), exportMax)
	})
	checkKeepers(st, add)
	overLimit(reports, reportMax, func(k slotKey, most int, at time.Time) {
		add(CheckFlowLimit, "shard %d %s key %q: %d runs held slots at %s (limit %d)", k.shard, k.name, k.key, most,
			at.Format(time.RFC3339Nano), reportMax)
	})
	overLimit(st.activitySlots, renderMax, func(k slotKey, most int, at time.Time) {
		add(CheckActivityFlowLimit, "shard %d %s key %q: %d attempts held slots at %s (limit %d)", k.shard, k.name, k.key,
			most, at.Format(time.RFC3339Nano), renderMax)
	})
	rendered := map[string]bool{}
	for _, r := range st.activitySlots {
		rendered[r.id] = true
	}
	for _, r := range reports {
		if x := st.execs[r.id]; x != nil && x.state == "COMPLETED" && !rendered[r.id] {
			add(CheckActivityFlowLimit, "report %s completed, and its render_report attempt recorded no slot", r.id)
		}
	}
}

// byWorkflow are the rows of workflow name.
func byWorkflow(rows []*slotRow, name string) []*slotRow {
	var out []*slotRow
	for _, r := range rows {
		if r.name == name {
			out = append(out, r)
		}
	}
	return out
}

// anyShard is the shard of a slot counted on every shard together.
const anyShard = 0xFFFF

// allShards are rows as one shard's, so that a key is counted across the
// cluster.
func allShards(rows []*slotRow) []*slotRow {
	out := make([]*slotRow, len(rows))
	for i, r := range rows {
		c := *r
		c.shard = anyShard
		out[i] = &c
	}
	return out
}

// checkKeepers checks that each keeper chain's last run runs and every
// other one continued as new: a keeper holds its key's slots for good.
func checkKeepers(st *DBState, add func(check, format string, args ...any)) {
	running := map[string]int{}
	for _, x := range st.execs {
		if x.name != wfKeeper {
			continue
		}
		switch x.state {
		case "RUNNING":
			running[x.wfID]++
		case "CONTINUED_AS_NEW":
		default:
			add(CheckClusterFlowLimit, "keeper run %s (%s) is %s", x.id, x.wfID, x.state)
		}
	}
	for _, id := range sortedKeys(running) {
		if n := running[id]; n != 1 {
			add(CheckClusterFlowLimit, "keeper %s has %d running runs", id, n)
		}
	}
}

// overLimit calls over for every key of a shard whose rows held more
// than limit slots at once.
func overLimit(rows []*slotRow, limit int, over func(k slotKey, most int, at time.Time)) {
	byKey := map[slotKey][]*slotRow{}
	for _, r := range rows {
		k := slotKey{r.shard, r.name, r.key}
		byKey[k] = append(byKey[k], r)
	}
	for k, rows := range byKey {
		if most, at := mostAtOnce(rows); most > limit {
			over(k, most, at)
		}
	}
}

// mostAtOnce is the most slots held at once, and when. A slot given back
// at the instant another is taken does not overlap it.
func mostAtOnce(rows []*slotRow) (int, time.Time) {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range rows {
		if !r.till.IsZero() && !r.till.After(r.since) {
			continue // closed in the transaction that took it
		}
		edges = append(edges, edge{r.since, 1})
		if !r.till.IsZero() {
			edges = append(edges, edge{r.till, -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta // give back first
	})
	most, now, at := 0, 0, time.Time{}
	for _, e := range edges {
		now += e.delta
		if now > most {
			most, at = now, e.at
		}
	}
	return most, at
}

// waitedAfter is how long after its start a run took its slot to count
// as one that waited in the queue.
const waitedAfter = 100 * time.Millisecond

// FlowStats summarizes the flow part: the reports' slots, how many runs
// waited for theirs, and the most held at once by one key of one shard.
func FlowStats(st *DBState) string {
	byKey := map[slotKey][]*slotRow{}
	waited := 0
	for _, r := range byWorkflow(st.slots, wfReport) {
		k := slotKey{r.shard, r.name, r.key}
		byKey[k] = append(byKey[k], r)
		if r.since.Sub(r.created) >= waitedAfter {
			waited++
		}
	}
	most := 0
	for _, rows := range byKey {
		n, _ := mostAtOnce(rows)
		most = max(most, n)
	}
	acts := map[slotKey][]*slotRow{}
	for _, r := range st.activitySlots {
		k := slotKey{r.shard, r.name, r.key}
		acts[k] = append(acts[k], r)
	}
	mostActs := 0
	for _, rows := range acts {
		n, _ := mostAtOnce(rows)
		mostActs = max(mostActs, n)
	}
	return fmt.Sprintf("flow control (%s, limit %d per customer and shard): %d runs took slots on %d keys, %d of them waited %s or more; most held at once by one key: %d; %s (limit %d): %d attempts held slots on %d keys, most at once: %d; %s",
		wfReport, reportMax, len(byWorkflow(st.slots, wfReport)), len(byKey), waited, waitedAfter, most, activityRender, renderMax,
		len(st.activitySlots), len(acts), mostActs, exportStats(st))
}

// exportStats summarizes the part counted across the cluster.
func exportStats(st *DBState) string {
	exports := byWorkflow(st.slots, wfExport)
	shards, byKey := map[uint16]bool{}, map[string][]*slotRow{}
	for _, r := range exports {
		shards[r.shard] = true
		byKey[r.key] = append(byKey[r.key], r)
	}
	most := 0
	for _, rows := range byKey {
		n, _ := mostAtOnce(rows)
		most = max(most, n)
	}
	keepers := 0
	for _, x := range st.execs {
		if x.name == wfKeeper {
			keepers++
		}
	}
	return fmt.Sprintf("%s (limit %d per tenant, all shards together): %d runs took slots on %d keys from %d shards, most held at once by one key: %d; %d keeper runs",
		wfExport, exportMax, len(exports), len(byKey), len(shards), most, keepers)
}
