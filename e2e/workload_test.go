package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testToken is the bearer token the fake expects.
const testToken = "hvt_0123456789abcdef_0123456789abcdef0123456789abcdef0123456789abcdef"

// fakeOrders answers keyed order starts (one execution id per key) and
// signals; a request without testToken, and a signal to an empty execution
// id, are refused as harvestd does.
type fakeOrders struct {
	mu      sync.Mutex
	execs   map[string]string // start key -> execution id
	signals []string          // execution ids signalled
	starts  atomic.Int64
	onStart func(n int64, r *http.Request) bool // false: answer nothing
	onSig   func(r *http.Request) int           // status to answer, 0: normal
	cancels map[string]int                      // execution id -> cancels answered
	onCan   func(n int) int                     // status of the nth cancel of an execution, 0: normal
}

func (f *fakeOrders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const execID = "00027274-b82d-4568-be3c-38282c33739f"
	_, _ = io.Copy(io.Discard, r.Body) // so that a client hang-up cancels r.Context()
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":"unauthenticated","error":"unauthenticated: no bearer token"}`))
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/start"):
		if f.onStart != nil && !f.onStart(f.starts.Add(1), r) {
			return
		}
		f.mu.Lock()
		f.execs[r.Header.Get("Idempotency-Key")] = execID
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"execution_id": execID, "started_fresh": true})
	case strings.Contains(r.URL.Path, "/signal/"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/harvest/workflows/"), "/signal/"+sigApproved)
		if id == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"code":"invalid_argument","error":"execution id \"\" is not a UUID"}`))
			return
		}
		if f.onSig != nil {
			if st := f.onSig(r); st != 0 {
				w.WriteHeader(st)
				return
			}
		}
		f.mu.Lock()
		f.signals = append(f.signals, id)
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"execution_id": id, "signal_delivered": true})
	case strings.HasSuffix(r.URL.Path, "/cancel"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/harvest/workflows/"), "/cancel")
		f.mu.Lock()
		if f.cancels == nil {
			f.cancels = map[string]int{}
		}
		f.cancels[id]++
		n := f.cancels[id]
		f.mu.Unlock()
		st := 0
		if f.onCan != nil {
			st = f.onCan(n)
		}
		switch st {
		case 0:
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "execution_id": id, "state": "RUNNING",
				"cancel_requested": true, "newly_cancelled": n == 1})
		case http.StatusConflict:
			w.WriteHeader(st)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": codeTerminal, "error": "closed", "execution_id": id, "state": "CANCELLED"})
		default:
			w.WriteHeader(st)
		}
	default:
		http.NotFound(w, r)
	}
}

func orderChain() chain {
	return chain{ops: []*Op{
		{Kind: KindStart, Workflow: wfOrder, Key: "ord-1"},
		{Kind: KindSignal, Workflow: wfOrder, Key: "ord-1-approved"},
	}}
}

// The run that found it: the start of ord-7393 was answered, its deliberate
// re-delivery was cut by the end of the load, and the signal was parked
// without the execution id and sent after the heal with an empty one (400),
// leaving the order waiting for its approval forever.
func TestParkedSignalKeepsItsTarget(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	f := &fakeOrders{execs: map[string]string{}}
	f.onStart = func(n int64, r *http.Request) bool {
		if n == 2 { // the dup: the load stops while it is in flight
			stop()
			<-r.Context().Done()
			return false
		}
		return true
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	hist := NewHistory(nil)
	wl := &Workload{Client: NewClient([]string{srv.URL}, testToken, hist), Workers: 1, DupRate: 1}
	wl.runChain(ctx, orderChain(), 5*time.Second, false)
	if len(wl.parked) != 1 || len(wl.parked[0].ops) != 1 || wl.parked[0].ops[0].Target == "" {
		t.Fatalf("parked %+v: want the signal with its execution id", wl.parked)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if done, left := wl.Redeliver(rctx, 5*time.Second); done != 1 || left != 0 {
		t.Fatalf("redeliver: %d done, %d left", done, left)
	}
	for _, op := range hist.Ops() {
		if op.Kind == KindSignal && (op.Target == "" || !op.OK) {
			t.Errorf("signal op %+v", op)
		}
	}
	if len(f.signals) != 1 || f.signals[0] == "" {
		t.Errorf("signals %q", f.signals)
	}
	if b := wl.Bugs(); len(b) > 0 {
		t.Errorf("bugs: %q", b)
	}
}

// A parked start is re-sent (same key) before its signal, which then goes
// to the execution the start's answer names.
func TestParkedStartIsResentBeforeItsSignal(t *testing.T) {
	f := &fakeOrders{execs: map[string]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	hist := NewHistory(nil)
	wl := &Workload{Client: NewClient([]string{srv.URL}, testToken, hist), Workers: 1}
	ctx, stop := context.WithCancel(context.Background())
	stop()
	wl.runChain(ctx, orderChain(), time.Second, false) // parked whole
	if done, left := wl.Redeliver(context.Background(), 5*time.Second); done != 1 || left != 0 {
		t.Fatalf("redeliver: %d done, %d left", done, left)
	}
	ops := hist.Ops()
	if len(ops) != 2 || ops[0].Kind != KindStart || ops[1].Kind != KindSignal || ops[1].Target != ops[0].ExecID || !ops[1].OK {
		t.Fatalf("ops %+v", ops)
	}
}

// Re-delivery after the heal outlasts one op's budget: an op still
// unanswered within it is re-sent in another round while the re-delivery
// deadline lasts; a definite 4xx is not re-sent.
func TestRedeliverRetriesUntilAnswered(t *testing.T) {
	var healed atomic.Bool
	f := &fakeOrders{execs: map[string]string{}}
	f.onSig = func(r *http.Request) int {
		if !healed.Load() {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	hist := NewHistory(nil)
	wl := &Workload{Client: NewClient([]string{srv.URL}, testToken, hist), Workers: 2}
	wl.park(chain{ops: []*Op{{Kind: KindSignal, Workflow: wfOrder, Key: "ord-1-approved", Target: "00027274-b82d-4568-be3c-38282c33739f"}}})
	wl.park(chain{ops: []*Op{{Kind: KindSignal, Workflow: wfOrder, Key: "ord-2-approved", Target: "00027274-b82d-4568-be3c-38282c33739f"}}, refused: true})
	time.AfterFunc(time.Second, func() { healed.Store(true) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if done, left := wl.Redeliver(ctx, 300*time.Millisecond); done != 1 || left != 1 {
		t.Fatalf("redeliver: %d done, %d left; want 1 and the refused one", done, left)
	}
	for _, op := range hist.Ops() {
		if op.Key == "ord-2-approved" {
			t.Errorf("a refused op was re-sent: %+v", op)
		}
	}
}

// Every request carries the token: without it the fake refuses the start.
func TestClientSendsItsToken(t *testing.T) {
	srv := httptest.NewServer(&fakeOrders{execs: map[string]string{}})
	defer srv.Close()
	for _, tc := range []struct {
		token string
		ok    bool
	}{{testToken, true}, {"", false}} {
		op := NewClient([]string{srv.URL}, tc.token, NewHistory(nil)).Do(context.Background(),
			&Op{Kind: KindStart, Workflow: wfOnboarding, Key: "onb-1"}, 1)
		if op.OK != tc.ok || (!tc.ok && op.Status != http.StatusUnauthorized) {
			t.Errorf("token %q: ok %v, status %d, want ok %v", tc.token, op.OK, op.Status, tc.ok)
		}
	}
}

// A signal with no execution id is never sent: it is the workload's own bug.
func TestSignalWithoutTargetIsNotSent(t *testing.T) {
	f := &fakeOrders{execs: map[string]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	hist := NewHistory(nil)
	wl := &Workload{Client: NewClient([]string{srv.URL}, testToken, hist), Workers: 1}
	wl.runChain(context.Background(), chain{ops: []*Op{{Kind: KindSignal, Workflow: wfOrder, Key: "x-approved"}}}, time.Second, true)
	if len(hist.Ops()) != 0 || len(wl.Bugs()) != 1 {
		t.Fatalf("ops %d, bugs %q", len(hist.Ops()), wl.Bugs())
	}
}

// A cancel goes to the execution its chain's start named, is retried on a
// 5xx, and a 409 execution_terminal is an answer: the chain is done, not
// parked as refused.
func TestCancelChain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status []int // the answers to the cancels, in order (0: normal)
		check  func(t *testing.T, op *Op)
	}{
		{"retried until recorded", []int{http.StatusServiceUnavailable, 0}, func(t *testing.T, op *Op) {
			require.True(t, op.OK)
			require.Len(t, op.Attempts, 2)
			require.Equal(t, "RUNNING", op.State)
			require.True(t, *op.CancelRequested)
			require.False(t, *op.NewlyCancelled, "the second cancel the fake saw")
		}},
		{"a closed run", []int{http.StatusConflict}, func(t *testing.T, op *Op) {
			require.False(t, op.OK)
			require.True(t, op.Answered())
			require.Equal(t, codeTerminal, op.Code)
			require.Equal(t, "CANCELLED", op.State)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeOrders{execs: map[string]string{}, onCan: func(n int) int { return tc.status[n-1] }}
			srv := httptest.NewServer(f)
			defer srv.Close()
			hist := NewHistory(nil)
			wl := &Workload{Client: NewClient([]string{srv.URL}, testToken, hist), Workers: 1}
			ch := cancelChain(1)
			ch.ops, ch.cancelAfter = []*Op{ch.ops[0], ch.ops[len(ch.ops)-1]}, time.Millisecond
			wl.runChain(context.Background(), ch, 5*time.Second, false)
			require.Empty(t, wl.parked)
			ops := hist.Ops()
			require.Len(t, ops, 2)
			require.Equal(t, KindCancel, ops[1].Kind)
			require.Equal(t, ops[0].ExecID, ops[1].Target)
			require.Equal(t, ops[0].ExecID, ops[1].ExecID)
			tc.check(t, ops[1])
		})
	}
}
