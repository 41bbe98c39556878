package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// chainWorld is a synthetic counter chain (every 2, until 5: three runs)
// as a correct cluster leaves it, with the ops its client recorded: adds
// sent to the first and to later run ids, one carried over a hand-over
// (add-2: received by run 0, consumed by run 1), a re-delivery to the
// other run id.
type chainWorld struct {
	t    *testing.T
	ctx  context.Context
	conn *pgx.Conn
	dsns map[uint16]string
	runs []string
	ops  []*Op
}

const chainKey = "cnt-1"

func addKey(i int) string { return fmt.Sprintf("%s-add-%d", chainKey, i) }

func newChainWorld(t *testing.T) *chainWorld {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	dsn, conn := plantDB(ctx, t)
	w := &chainWorld{t: t, ctx: ctx, conn: conn, dsns: map[uint16]string{0: dsn}}
	w.plantRuns()
	w.recordOps()
	return w
}

// plantRuns plants the chain's three runs, their links, signals and the
// last run's output.
func (w *chainWorld) plantRuns() {
	for i := range 3 {
		id, key := newExecID(0), ""
		if i == 0 {
			key = chainKey
		}
		require.NoError(w.t, plantExecution(w.ctx, w.conn, id, wfCounter, "wf-cnt-1", key, "COMPLETED"))
		if i > 0 {
			require.NoError(w.t, plantLink(w.ctx, w.conn, w.runs[0], w.runs[i-1], id))
		}
		w.runs = append(w.runs, id)
	}
	received := map[int][]int{0: {0, 1, 2}, 1: {2, 3}, 2: {4}} // run -> adds (add-2 carried)
	for run, adds := range received {
		for _, a := range adds {
			require.NoError(w.t, plantSignal(w.ctx, w.conn, w.runs[run], addKey(a)))
		}
	}
	ids := []string{addKey(0), addKey(1), addKey(2), addKey(3), addKey(4)}
	require.NoError(w.t, plantOutput(w.ctx, w.conn, w.runs[2], map[string]any{"count": 5, "sum": 5, "ids": ids, "runs": 3}))
}

// recordOps records the client's answered ops.
func (w *chainWorld) recordOps() {
	first := w.runs[0]
	w.op(Op{Kind: KindStart, Workflow: wfCounter, Key: chainKey, Every: 2, Until: 5, ExecID: first, Fresh: boolp(true)})
	w.add(0, first, "", true)
	w.add(1, first, "", true)
	w.add(2, first, "", true)
	w.add(3, first, w.runs[1], true)
	w.add(3, w.runs[1], "", false).Dup = true // the re-delivery to the other run id
	w.add(4, w.runs[1], w.runs[2], true)
}

func (w *chainWorld) op(o Op) *Op {
	o.ID, o.OK, o.Status = int64(len(w.ops)+1), true, 200
	w.ops = append(w.ops, &o)
	return &o
}

// add records the answer of add i sent to target.
func (w *chainWorld) add(i int, target, current string, delivered bool) *Op {
	return w.op(Op{Kind: KindSignal, Workflow: wfCounter, Key: addKey(i), Chain: w.runs[0], Target: target,
		ExecID: target, Current: current, Delivered: boolp(delivered)})
}

func (w *chainWorld) exec(sql string, args ...any) {
	w.t.Helper()
	_, err := w.conn.Exec(w.ctx, sql, args...)
	require.NoError(w.t, err)
}

// check runs the whole checker and counts the violations by check.
func (w *chainWorld) check() ([]Violation, map[string]int) {
	w.t.Helper()
	st, err := ReadDB(w.ctx, w.dsns)
	require.NoError(w.t, err)
	vs := Check(w.ops, st)
	got := map[string]int{}
	for _, v := range vs {
		w.t.Logf("violation [%s] %s", v.Check, v.Detail)
		got[v.Check]++
	}
	return vs, got
}

// reported reports whether vs has a violation of check saying says.
func reported(vs []Violation, check, says string) bool {
	for _, v := range vs {
		if v.Check == check && strings.Contains(v.Detail, says) {
			return true
		}
	}
	return false
}

// TestCheckChains runs the checker on a correct counter chain (no
// violation at all: its later runs are no phantoms, its continued runs
// count as closed, its adds to old run ids are no lost signals), then on
// copies with one planted violation each.
func TestCheckChains(t *testing.T) {
	cases := []struct {
		name  string
		plant func(w *chainWorld)
		want  string // "" for none
		says  string // what the violation says
	}{
		{"Clean", func(*chainWorld) {}, "", ""},
		{"RedeliveryToTheOtherRunIDCutOff", func(w *chainWorld) {
			// The load stopped during a deliberate re-delivery of an
			// answered add to another run id: the add was answered.
			cut := w.add(4, w.runs[0], "", false)
			cut.OK, cut.Status, cut.Delivered, cut.Dup, cut.Err = false, 0, nil, true, "context canceled"
		}, "", ""},
		{"DoubledSignal", func(w *chainWorld) {
			w.exec(`UPDATE harvest_executions SET output = jsonb_set(output, '{ids}', (output->'ids') || (output->'ids'->0))
			         WHERE execution_id = $1`, w.runs[2])
		}, CheckChainSignals, "2 times"},
		{"LostSignal", func(w *chainWorld) {
			w.exec(`UPDATE harvest_executions SET output = jsonb_set(output, '{ids}', (output->'ids') - 4) WHERE execution_id = $1`, w.runs[2])
		}, CheckChainSignals, "(lost)"},
		{"SignalNobodySent", func(w *chainWorld) {
			w.exec(`UPDATE harvest_executions SET output = jsonb_set(output, '{ids,0}', '"stray"') WHERE execution_id = $1`, w.runs[2])
		}, CheckChainSignals, "no client sent"},
		{"DeliveredTwiceThroughTheOtherRunID", func(w *chainWorld) {
			w.add(4, w.runs[0], w.runs[2], true).Dup = true
		}, CheckChainSignals, "signal_delivered more than once"},
		{"ForkedChain", func(w *chainWorld) {
			fork := newExecID(0)
			require.NoError(t, plantExecution(w.ctx, w.conn, fork, wfCounter, "wf-cnt-1", "", "COMPLETED"))
			w.exec(`UPDATE harvest_executions SET chain_id = $1, continued_from = $1 WHERE execution_id = $2`, w.runs[0], fork)
		}, CheckChainLinks, "has 2 successors"},
		{"MissingLink", func(w *chainWorld) {
			// Run 1 names a successor no shard holds (histories are
			// append-only: a lost run is planted as a dangling link).
			w.exec(`UPDATE harvest_executions SET continued_to = $2 WHERE execution_id = $1`, w.runs[1], newExecID(0))
		}, CheckChainLinks, "missing link"},
		{"ExtraLink", func(w *chainWorld) {
			extra := newExecID(0)
			require.NoError(t, plantExecution(w.ctx, w.conn, extra, wfCounter, "wf-cnt-1", "", "COMPLETED"))
			require.NoError(t, plantLink(w.ctx, w.conn, w.runs[0], w.runs[2], extra))
			require.NoError(t, plantOutput(w.ctx, w.conn, extra, map[string]any{"count": 5, "ids": []string{
				addKey(0), addKey(1), addKey(2), addKey(3), addKey(4)}, "runs": 4}))
		}, CheckChainLinks, "want 3"},
		{"ContinuedWithNoSuccessor", func(w *chainWorld) {
			w.exec(`UPDATE harvest_executions SET state = 'CONTINUED_AS_NEW' WHERE execution_id = $1`, w.runs[2])
		}, CheckChainLinks, "with no successor"},
		{"ChainNeverEnds", func(w *chainWorld) {
			w.exec(`UPDATE harvest_executions SET state = 'FAILED' WHERE execution_id = $1`, w.runs[2])
		}, CheckChainEnd, "is FAILED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newChainWorld(t)
			c.plant(w)
			vs, got := w.check()
			if c.want == "" {
				require.Empty(t, got)
				return
			}
			require.True(t, reported(vs, c.want, c.says), "planted a %q violation (%q); reported %v", c.want, c.says, got)
		})
	}
}
