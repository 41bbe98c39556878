package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// familyWorld is a parent with two children (one on the other shard) and
// an order with its approver, as a correct cluster leaves them, with the
// ops their clients recorded.
type familyWorld struct {
	t                      *testing.T
	ctx                    context.Context
	conns                  [2]*pgx.Conn
	dsns                   map[uint16]string
	parent, order, approve string
	kids                   []string
	ops                    []*Op
}

// newFamilyWorld plants the world; skipDone leaves out the childdone
// signal of the second child.
func newFamilyWorld(t *testing.T, skipDone bool) *familyWorld {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	w := &familyWorld{t: t, ctx: ctx, dsns: map[uint16]string{}}
	for shard := range 2 {
		dsn, conn := plantDB(ctx, t)
		w.conns[shard], w.dsns[uint16(shard)] = conn, dsn
	}
	w.plantParent(skipDone)
	w.plantApprover()
	return w
}

func (w *familyWorld) plantParent(skipDone bool) {
	w.parent = newExecID(0)
	require.NoError(w.t, plantExecution(w.ctx, w.conns[0], w.parent, wfParent, "wf-par-1", "par-1", "COMPLETED"))
	require.NoError(w.t, plantOutput(w.ctx, w.conns[0], w.parent, 2))
	for i := range 2 {
		w.plantChild(uint16(i), i)
	}
	for i, kid := range w.kids {
		if !skipDone || i == 0 {
			require.NoError(w.t, plantSignal(w.ctx, w.conns[0], w.parent, childDonePref+kid))
		}
	}
	w.ops = append(w.ops, &Op{ID: 1, Kind: KindStart, Workflow: wfParent, Key: "par-1", Children: 2, OK: true, Status: 201,
		ExecID: w.parent, Fresh: boolp(true)})
}

// plantChild plants child i of the parent in shard and its
// ChildWorkflowInitiated in the parent.
func (w *familyWorld) plantChild(shard uint16, i int) string {
	kid := newExecID(shard)
	key := fmt.Sprintf("%s%s:%d", childKeyPrefix, w.parent, i)
	require.NoError(w.t, plantExecution(w.ctx, w.conns[shard], kid, wfChild, kid, key, "COMPLETED"))
	require.NoError(w.t, plantEvent(w.ctx, w.conns[0], w.parent, "ChildWorkflowInitiated", map[string]any{"child_execution_id": kid}))
	w.kids = append(w.kids, kid)
	return kid
}

func (w *familyWorld) plantApprover() {
	w.order, w.approve = newExecID(1), newExecID(1)
	require.NoError(w.t, plantExecution(w.ctx, w.conns[1], w.order, wfOrder, "wf-orda-1", "orda-1", "COMPLETED"))
	require.NoError(w.t, plantSignal(w.ctx, w.conns[1], w.order, "orda-1-approved"))
	require.NoError(w.t, plantExecution(w.ctx, w.conns[1], w.approve, wfApprover, "wf-apr-1", "apr-1", "COMPLETED"))
	require.NoError(w.t, plantSignal(w.ctx, w.conns[1], w.order, w.sigKey()))
	w.ops = append(w.ops,
		&Op{ID: 2, Kind: KindStart, Workflow: wfOrder, Key: "orda-1", OK: true, Status: 201, ExecID: w.order, Fresh: boolp(true)},
		&Op{ID: 3, Kind: KindSignal, Workflow: wfOrder, Key: "orda-1-approved", Target: w.order, OK: true, Status: 200,
			ExecID: w.order, Delivered: boolp(true)},
		&Op{ID: 4, Kind: KindStart, Workflow: wfApprover, Key: "apr-1", Target: w.order, OK: true, Status: 201,
			ExecID: w.approve, Fresh: boolp(true)})
}

func (w *familyWorld) sigKey() string { return extSigPrefix + w.approve + ":1" }

// check runs the checker and counts the violations by check.
func (w *familyWorld) check() map[string]int {
	w.t.Helper()
	st, err := ReadDB(w.ctx, w.dsns)
	require.NoError(w.t, err)
	got := map[string]int{}
	for _, v := range Check(w.ops, st) {
		w.t.Logf("violation [%s] %s", v.Check, v.Detail)
		got[v.Check]++
	}
	return got
}

func TestCheckFamily(t *testing.T) {
	t.Run("clean parent and approver", func(t *testing.T) {
		require.Empty(t, newFamilyWorld(t, false).check())
	})
	t.Run("approver found the order closed", func(t *testing.T) {
		w := newFamilyWorld(t, false)
		late := newExecID(1)
		require.NoError(t, plantExecution(w.ctx, w.conns[1], late, wfApprover, "wf-apr-2", "apr-2", "FAILED"))
		require.NoError(t, plantEvent(w.ctx, w.conns[1], late, "ExternalSignalFailed",
			map[string]any{"command_id": "1", "error": map[string]any{"type": codeTerminal, "message": "closed"}}))
		w.ops = append(w.ops, &Op{ID: 5, Kind: KindStart, Workflow: wfApprover, Key: "apr-2", Target: w.order, OK: true,
			Status: 201, ExecID: late, Fresh: boolp(true)})
		require.Empty(t, w.check())
	})
	t.Run("approver failed otherwise", func(t *testing.T) {
		w := newFamilyWorld(t, false)
		bad := newExecID(1)
		require.NoError(t, plantExecution(w.ctx, w.conns[1], bad, wfApprover, "wf-apr-3", "apr-3", "FAILED"))
		w.ops = append(w.ops, &Op{ID: 5, Kind: KindStart, Workflow: wfApprover, Key: "apr-3", Target: w.order, OK: true,
			Status: 201, ExecID: bad, Fresh: boolp(true)})
		require.Positive(t, w.check()[CheckCompleted])
	})
	t.Run("doubled child", func(t *testing.T) {
		w := newFamilyWorld(t, false)
		// A second run of child 0's start key, in the other shard.
		extra := newExecID(1)
		require.NoError(t, plantExecution(w.ctx, w.conns[1], extra, wfChild, extra, childKeyPrefix+w.parent+":0", "COMPLETED"))
		require.Positive(t, w.check()[CheckChildren])
	})
	t.Run("missing childdone", func(t *testing.T) {
		require.Positive(t, newFamilyWorld(t, true).check()[CheckChildren])
	})
	t.Run("doubled external signal", func(t *testing.T) {
		w := newFamilyWorld(t, false)
		require.NoError(t, plantSignal(w.ctx, w.conns[1], w.order, w.sigKey()))
		require.Positive(t, w.check()[CheckExternal])
	})
	t.Run("child of no parent is a phantom", func(t *testing.T) {
		w := newFamilyWorld(t, false)
		stray := newExecID(1)
		require.NoError(t, plantExecution(w.ctx, w.conns[1], stray, wfChild, stray, childKeyPrefix+newExecID(0)+":0", "COMPLETED"))
		require.Positive(t, w.check()[CheckPhantom])
	})
	t.Run("outbox left over", func(t *testing.T) {
		w := newFamilyWorld(t, false)
		st, err := ReadDB(w.ctx, w.dsns)
		require.NoError(t, err)
		st.outbox[1] = 3
		got := map[string]int{}
		for _, v := range Check(w.ops, st) {
			got[v.Check]++
		}
		require.Positive(t, got[CheckChildren])
	})
}
