package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeCounter answers a counter chain as harvestd does: a keyed start
// names the first run; after two adds the chain has continued, and every
// add from then on is answered with the second run as
// current_execution_id, whichever run id it was sent to.
type fakeCounter struct {
	mu   sync.Mutex
	adds []fakeAdd
}

// fakeAdd is one add the fake received.
type fakeAdd struct{ target, key, id string }

const (
	fakeFirst  = "00017274-b82d-4568-be3c-38282c33739f"
	fakeSecond = "00017274-b82d-4568-be3c-38282c3373a0"
)

func (f *fakeCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/start") {
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"execution_id": fakeFirst, "started_fresh": true})
		return
	}
	target := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/harvest/workflows/"), "/signal/"+sigAdd)
	var body struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.adds = append(f.adds, fakeAdd{target, r.Header.Get("Idempotency-Key"), body.ID})
	continued := len(f.adds) > 2
	f.mu.Unlock()
	ans := map[string]any{"execution_id": target, "signal_delivered": true}
	if continued && target != fakeSecond {
		ans["current_execution_id"] = fakeSecond
	}
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(ans)
}

// A counter chain sends Until adds, each keyed with its id, to the first
// run or the latest run an answer named, and re-delivers each to the
// other run id; its ops name the chain's first run.
func TestCounterChain(t *testing.T) {
	f := &fakeCounter{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	hist := NewHistory(nil)
	wl := &Workload{Client: NewClient([]string{srv.URL}, testToken, hist), Workers: 1, DupRate: 1}
	ch := counterChain(1)
	until := ch.ops[0].Until
	require.GreaterOrEqual(t, until, 5)
	require.Contains(t, []int{2, 3}, ch.ops[0].Every)
	wl.runChain(context.Background(), ch, 5*time.Second, false)
	require.Empty(t, wl.parked)

	t.Run("EveryAddIsSentTwiceUnderItsKeyToBothRuns", func(t *testing.T) {
		byKey := map[string][]string{}
		for _, a := range f.adds {
			require.Equal(t, a.key, a.id, "the payload's id is the key")
			byKey[a.key] = append(byKey[a.key], a.target)
		}
		require.Len(t, byKey, until)
		for k, targets := range byKey {
			require.Len(t, targets, 2, k)
			if k != "cnt-1-add-0" && k != "cnt-1-add-1" && k != "cnt-1-add-2" {
				require.ElementsMatch(t, []string{fakeFirst, fakeSecond}, targets, "%s: once the second run is known, the re-delivery goes to the other run id", k)
			}
		}
	})
	t.Run("OpsNameTheChainAndTheCurrentRun", func(t *testing.T) {
		later := 0
		for _, op := range hist.Ops() {
			if op.Kind == KindSignal {
				require.Equal(t, fakeFirst, op.Chain)
				if op.Current == fakeSecond {
					later++
				}
			}
		}
		require.NotZero(t, later)
	})
}
