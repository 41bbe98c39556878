package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/internal/pgtest"
)

func boolp(b bool) *bool { return &b }

// TestCheckerFindsViolations runs the checker on a clean synthetic history
// and database (no violation), then on corrupted copies: it must report
// each broken promise. This is the part of "the checker can fail" that
// needs no cluster; TestChaos plants the same corruption into a real run.
func TestCheckerFindsViolations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsns := map[uint16]string{0: pgtest.NewDB(t), 1: pgtest.NewDB(t)}
	conns := map[uint16]*pgx.Conn{}
	for s, dsn := range dsns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		conns[s] = c
	}
	now := time.Now()
	var ops []*Op
	var seq int64
	op := func(o Op) *Op {
		seq++
		o.ID, o.Begin, o.End, o.OK, o.Status = seq, now, now, true, 200
		ops = append(ops, &o)
		return &o
	}
	// A keyed start answered twice (a re-delivery), an order with its
	// signal, a signal-with-start.
	onb, ord, sws := newExecID(0), newExecID(1), newExecID(1)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(plantExecution(ctx, conns[0], onb, wfOnboarding, "wf-a", "k1", "COMPLETED"))
	must(plantExecution(ctx, conns[1], ord, wfOrder, "wf-b", "k2", "COMPLETED"))
	must(plantSignal(ctx, conns[1], ord, "k2-approved"))
	must(plantExecution(ctx, conns[1], sws, wfOrder, "sws-1", "", "COMPLETED"))
	must(plantSignal(ctx, conns[1], sws, "sws-1-approved"))
	op(Op{Kind: KindStart, Workflow: wfOnboarding, Key: "k1", ExecID: onb, Fresh: boolp(true)})
	op(Op{Kind: KindStart, Workflow: wfOnboarding, Key: "k1", ExecID: onb, Fresh: boolp(false), Dedup: boolp(true), Dup: true})
	op(Op{Kind: KindStart, Workflow: wfOrder, Key: "k2", ExecID: ord, Fresh: boolp(true)})
	op(Op{Kind: KindSignal, Workflow: wfOrder, Key: "k2-approved", Target: ord, ExecID: ord, Delivered: boolp(true)})
	op(Op{Kind: KindSignal, Workflow: wfOrder, Key: "k2-approved", Target: ord, ExecID: ord, Delivered: boolp(false), Dup: true})
	op(Op{Kind: KindSWS, Workflow: wfOrder, WorkflowID: "sws-1", Key: "sws-1-approved", ExecID: sws, Delivered: boolp(true)})

	check := func() map[string]int {
		t.Helper()
		st, err := ReadDB(ctx, dsns)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, v := range Check(ops, st) {
			t.Logf("violation [%s] %s", v.Check, v.Detail)
			got[v.Check]++
		}
		return got
	}
	if got := check(); len(got) != 0 {
		t.Fatalf("clean history: want no violation, got %v", got)
	}

	// Broken promises, one at a time.
	must(plantExecution(ctx, conns[1], newExecID(1), wfOnboarding, "wf-a2", "k1", "COMPLETED"))          // start dedup across shards
	must(plantSignal(ctx, conns[1], ord, "k2-approved"))                                                 // signal dedup
	must(plantExecution(ctx, conns[0], newExecID(0), wfOrder, "sws-1", "", "COMPLETED"))                 // second sws run
	must(plantExecution(ctx, conns[0], newExecID(0), wfOrder, "stray", "", "RUNNING"))                   // phantom, never completes
	op(Op{Kind: KindStart, Workflow: wfOnboarding, Key: "k3", ExecID: newExecID(0), Fresh: boolp(true)}) // acked, missing
	op(Op{Kind: KindStart, Workflow: wfOnboarding, Key: "k1", ExecID: newExecID(0), Dedup: boolp(true)}) // answers disagree
	lost := op(Op{Kind: KindStart, Workflow: wfOnboarding, Key: "k4"})                                   // never answered
	lost.OK, lost.Status, lost.Err = false, 0, "timeout"
	_, err := conns[0].Exec(ctx, `UPDATE harvest_executions SET next_event_id = 5 WHERE execution_id = $1`, onb) // history gap
	must(err)

	got := check()
	for _, c := range []string{CheckStartDedup, CheckSWSDedup, CheckSignalOnce, CheckAckedExists, CheckAnswersAgree,
		CheckPhantom, CheckCompleted, CheckAnswered, CheckHistory} {
		if got[c] == 0 {
			t.Errorf("check %q: planted a violation, none reported", c)
		}
	}
}
