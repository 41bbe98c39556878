package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/ring"
)

// cluster is several nodes in this process over real memberlist (loopback)
// and four real shard databases.
type cluster struct {
	t     *testing.T
	dsns  map[uint16]string
	reg   *harvest.Registry
	svc   *demo.Services
	nodes []*Node
	cat   ring.Catalog
	ttl   time.Duration
}

// newCluster starts size nodes with the demo workflows and extra.
func newCluster(t *testing.T, size int, leaseTTL time.Duration, extra ...harvest.Registrable) *cluster {
	t.Helper()
	c := &cluster{t: t, dsns: map[uint16]string{}, reg: harvest.NewRegistry(), svc: demo.NewServices(), ttl: leaseTTL}
	require.NoError(t, demo.New(c.svc).Register(c.reg))
	require.NoError(t, c.reg.Register(extra...))
	for s := range uint16(4) {
		c.dsns[s] = pgtest.NewDB(t)
		c.cat.Readable = append(c.cat.Readable, s)
	}
	c.cat.Writable = c.cat.Readable
	for i := range size {
		c.add(t, i)
	}
	c.waitStable()
	return c
}

// add starts node i, joining node 0.
func (c *cluster) add(t *testing.T, i int) *Node {
	var join []string
	if i > 0 {
		join = []string{c.nodes[0].GossipAddr()}
	}
	cfg := Config{
		NodeID: fmt.Sprintf("n%d", i), DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Shards: c.dsns,
		Gossip:       &membership.Config{BindAddr: "127.0.0.1", Join: join, Profile: membership.ProfileLocal, RejoinInterval: 500 * time.Millisecond},
		ClusterKey:   clusterkeytest.Key(),
		PollInterval: 20 * time.Millisecond, LeaseTTL: c.ttl, Logger: zerolog.Nop(),
	}
	n, err := New(cfg, c.reg)
	require.NoError(t, err)
	require.NoError(t, n.Start(ctxT(t)))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	if i < len(c.nodes) {
		c.nodes[i] = n
	} else {
		c.nodes = append(c.nodes, n)
	}
	return n
}

func (c *cluster) live() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// waitStable waits until every live node sees the others alive and each
// shard is served by its ring owner. Joining and handing shards over
// take a few seconds; on a busy machine (CI runs packages side by side
// under the race detector) memberlist's probes and the lease handoffs
// take longer, hence the minute. A failure says what was not stable.
func (c *cluster) waitStable() {
	c.t.Helper()
	live := c.live()
	var ids []string
	for _, n := range live {
		ids = append(ids, n.NodeID())
	}
	eventuallyWhy(c.t, "a stable cluster", stableWithin, func() string {
		for _, n := range live {
			if alive := n.view.Alive(); len(alive) != len(live) {
				return fmt.Sprintf("%s sees %d of %d nodes alive", n.NodeID(), len(alive), len(live))
			}
		}
		for _, s := range c.cat.Readable {
			owner, _ := ring.OwnerOf(s, ids)
			if o := c.byID(owner); !slices.Contains(o.Owned(), s) {
				return fmt.Sprintf("shard %d: ring owner %s serves %v", s, owner, o.Owned())
			}
		}
		return ""
	})
}

// stableWithin bounds waitStable.
const stableWithin = time.Minute

func (c *cluster) byID(id string) *Node {
	for _, n := range c.live() {
		if n.NodeID() == id {
			return n
		}
	}
	return nil
}

// owner is the live node serving shard, or nil.
func (c *cluster) owner(shard uint16) *Node {
	for _, n := range c.live() {
		if slices.Contains(n.Owned(), shard) {
			return n
		}
	}
	return nil
}

// victim picks a node other than node 0 that serves a shard.
func (c *cluster) victim(t *testing.T) (int, uint16) {
	for i, n := range c.nodes {
		if i > 0 && n != nil && len(n.Owned()) > 0 {
			return i, n.Owned()[0]
		}
	}
	t.Fatal("no node besides node 0 serves a shard")
	return 0, 0
}

// kill crashes node i: no leave, no lease release.
func (c *cluster) kill(i int) {
	c.nodes[i].crash()
	c.nodes[i] = nil
}

type reply struct {
	Status int
	Body   map[string]any
}

// A 503 that says no raft leader is reachable, or that the node's token
// table may be out of date, is retried until leaderRetryWithin, as the
// answer asks: it comes before any work, while an election runs or a
// follower catches up (a loaded machine's raft can lose its leader for a
// moment), and tests are about what the leader answers.
func call(t *testing.T, n *Node, method, path string, body any, headers ...string) reply {
	t.Helper()
	deadline := time.Now().Add(leaderRetryWithin)
	for {
		r := send(t, request(t, n, method, path, body, headers...))
		if !noLeader(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaderRetryWithin bounds how long call retries those 503s.
const leaderRetryWithin = 15 * time.Second

// noLeader reports whether r is a 503 that did nothing and that a client
// retries: the API's "no raft leader reachable", "token table may be out
// of date", or a shard's engine not (yet) running on its owner.
func noLeader(r reply) bool {
	msg, _ := r.Body["error"].(string)
	return r.Status == http.StatusServiceUnavailable &&
		(strings.HasPrefix(msg, "no raft leader reachable") || strings.Contains(msg, "token table may be out of date") ||
			strings.HasSuffix(msg, "engine not running"))
}

// request is a request to n's API: body JSON-encoded (none when nil),
// headers alternating name and value.
func request(t *testing.T, n *Node, method, path string, body any, headers ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, "http://"+n.Addr()+api.BasePath+path, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// callAsNode is call as another node of the cluster would send it:
// headers (X-Harvest-Forwarded among them) signed with the cluster key,
// acting for an admin.
func callAsNode(t *testing.T, n *Node, method, path string, body any, headers ...string) reply {
	t.Helper()
	req := request(t, n, method, path, body, headers...)
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body) // as request sends it
		require.NoError(t, err)
	}
	api.SignNode(req, api.NodeSig{Key: clusterkeytest.Key().Derive(clusterkey.LabelHTTP), From: req.Header.Get(api.ForwardedHeader),
		To: n.NodeID(), Identity: auth.Anonymous, Body: raw, Time: time.Now()})
	return send(t, req)
}

func send(t *testing.T, req *http.Request) reply {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out := reply{Status: res.StatusCode}
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "%s", raw)
	}
	return out
}

func shardOf(t *testing.T, execID any) uint16 {
	id, err := uuid.Parse(fmt.Sprint(execID))
	require.NoError(t, err)
	return engine.ShardOf(id)
}

// eventTypes reads a run's history straight from its shard database.
func (c *cluster) eventTypes(t *testing.T, execID any) []string {
	conn, err := pgx.Connect(ctxT(t), c.dsns[shardOf(t, execID)])
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctxT(t), `SELECT event_type FROM harvest_events WHERE execution_id = $1 ORDER BY event_id`, fmt.Sprint(execID))
	require.NoError(t, err)
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return types
}

// eventuallyWhy polls cond until it returns "" and fails with its last
// answer, what was not yet true, after within.
func eventuallyWhy(t *testing.T, what string, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", within, what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClusterRouting(t *testing.T) {
	c := newCluster(t, 3, 5*time.Second)

	t.Run("StartsLandOnTheRingShard", func(t *testing.T) {
		for i := range 24 {
			n := c.live()[i%3]
			wfID := fmt.Sprintf("user-%d", i)
			r := call(t, n, "POST", "/workflows/onboarding/start", map[string]any{"workflow_id": wfID, "input": map[string]any{"user_id": i}})
			require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
			want, err := ring.PickShard(c.cat, "onboarding", wfID)
			require.NoError(t, err)
			require.Equal(t, want, shardOf(t, r.Body["execution_id"]), wfID)

			key := fmt.Sprintf("evt-%d", i)
			k := call(t, n, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": i}}, "Idempotency-Key", key)
			require.Equal(t, http.StatusCreated, k.Status, "%v", k.Body)
			keyShard, _ := ring.PickShard(c.cat, "onboarding", key)
			require.Equal(t, keyShard, shardOf(t, k.Body["execution_id"]), "keyed starts route by the key")
			idShard, _ := ring.PickShard(c.cat, "onboarding", fmt.Sprint(k.Body["workflow_id"]))
			require.Equal(t, keyShard, idShard, "the minted workflow id routes to the key's shard")
		}
	})

	// A node request is valid at the node it was signed for only: the
	// same request sent to another node is refused (a clear-text
	// cluster's captured forward cannot be replayed elsewhere).
	t.Run("ANodeRequestServesOnlyItsReceiver", func(t *testing.T) {
		to := c.live()[1]
		for _, n := range c.live() {
			req := request(t, n, "GET", "/workflows?page_size=1", nil)
			api.SignNode(req, api.NodeSig{Key: clusterkeytest.Key().Derive(clusterkey.LabelHTTP), From: c.live()[0].NodeID(),
				To: to.NodeID(), Identity: auth.Anonymous, Time: time.Now()})
			want := http.StatusUnauthorized
			if n == to {
				want = http.StatusOK
			}
			r := send(t, req)
			require.Equal(t, want, r.Status, "signed for %s, sent to %s: %v", to.NodeID(), n.NodeID(), r.Body)
		}
	})

	t.Run("HundredSameKeyStartsOverThreeNodes", func(t *testing.T) {
		const n = 100
		ids := make([]string, n)
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := call(t, c.live()[i%3], "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 1}},
					"Idempotency-Key", "burst-key")
				ids[i], statuses[i] = fmt.Sprint(r.Body["execution_id"]), r.Status
			})
		}
		wg.Wait()
		created := 0
		for i := range n {
			require.Equal(t, ids[0], ids[i])
			if statuses[i] == http.StatusCreated {
				created++
			} else {
				require.Equal(t, http.StatusOK, statuses[i])
			}
		}
		require.Equal(t, 1, created)
	})

	t.Run("BatchStartItemsLandOnTheirShards", func(t *testing.T) {
		items := make([]any, 40)
		for i := range items {
			items[i] = map[string]any{"workflow_name": "onboarding", "idempotency_key": fmt.Sprintf("batch-%d", i),
				"input": map[string]any{"user_id": i + 1}}
		}
		first := batchResults(t, call(t, c.live()[0], "POST", "/workflows/batch_start", map[string]any{"items": items}))
		again := batchResults(t, call(t, c.live()[1], "POST", "/workflows/batch_start", map[string]any{"items": items}))
		shards := map[uint16]bool{}
		for i := range items {
			require.EqualValues(t, http.StatusCreated, first[i]["status"], "%v", first[i])
			want, err := ring.PickShard(c.cat, "onboarding", fmt.Sprintf("batch-%d", i))
			require.NoError(t, err)
			require.Equal(t, want, shardOf(t, first[i]["execution_id"]), "item %d routes by its key", i)
			shards[want] = true
			require.EqualValues(t, http.StatusOK, again[i]["status"], "%v", again[i])
			require.Equal(t, first[i]["execution_id"], again[i]["execution_id"], "the resent item replays")
		}
		require.Greater(t, len(shards), 1, "the batch spans shards")
	})

	t.Run("AtomicBatchRunsOnItsShardsOwner", func(t *testing.T) {
		// Keys of one shard, and one key of another.
		byShard := map[uint16][]string{}
		for i := 0; len(byShard) < 2 || len(byShard[firstShard(byShard)]) < 5; i++ {
			key := fmt.Sprintf("atomic-%d", i)
			shard, err := ring.PickShard(c.cat, "onboarding", key)
			require.NoError(t, err)
			byShard[shard] = append(byShard[shard], key)
		}
		one := firstShard(byShard)
		items := make([]any, 5)
		for i, key := range byShard[one][:5] {
			items[i] = map[string]any{"workflow_name": "onboarding", "idempotency_key": key, "input": map[string]any{"user_id": i + 1}}
		}
		// Sent through every node: one creates, the others replay, each
		// forwarded whole to the shard's owner unless it is the owner.
		var first []map[string]any
		for n, node := range c.live() {
			res := batchResults(t, call(t, node, "POST", "/workflows/batch_start", map[string]any{"atomic": true, "items": items}))
			for i, r := range res {
				if n == 0 {
					require.EqualValues(t, http.StatusCreated, r["status"], "%v", r)
					require.Equal(t, one, shardOf(t, r["execution_id"]), "item %d runs on the batch's shard", i)
					continue
				}
				require.EqualValues(t, http.StatusOK, r["status"], "via %s: %v", node.NodeID(), r)
				require.Equal(t, first[i]["execution_id"], r["execution_id"], "via %s", node.NodeID())
			}
			if n == 0 {
				first = res
			}
		}
		var other string
		for shard, keys := range byShard {
			if shard != one {
				other = keys[0]
			}
		}
		spans := append(items[:2:2], map[string]any{"workflow_name": "onboarding", "idempotency_key": other})
		r := call(t, c.live()[1], "POST", "/workflows/batch_start", map[string]any{"atomic": true, "items": spans})
		require.Equal(t, http.StatusBadRequest, r.Status, "%v", r.Body)
		require.Equal(t, "spans_shards", r.Body["code"])
	})

	t.Run("ExecutionRoutesFromAnyNode", func(t *testing.T) {
		r := call(t, c.live()[0], "POST", "/workflows/order/start", map[string]any{"workflow_id": "route-me", "input": map[string]any{"order_id": "r", "sleep_ms": 10}})
		require.Equal(t, http.StatusCreated, r.Status)
		id := fmt.Sprint(r.Body["execution_id"])
		for _, n := range c.live() {
			d := call(t, n, "GET", "/workflows/"+id, nil)
			require.Equal(t, http.StatusOK, d.Status, "describe via %s", n.NodeID())
		}
		s := call(t, c.live()[1], "POST", "/workflows/"+id+"/signal/approved", map[string]any{"by": "x"}, "Idempotency-Key", "sig-1")
		require.Equal(t, http.StatusAccepted, s.Status)
		s = call(t, c.live()[2], "POST", "/workflows/"+id+"/signal/approved", map[string]any{"by": "x"}, "Idempotency-Key", "sig-1")
		require.Equal(t, false, s.Body["signal_delivered"])
		res := call(t, c.live()[2], "GET", "/workflows/"+id+"/result?wait=20s", nil)
		require.Equal(t, "COMPLETED", res.Body["state"])
	})

	// GET /flow reads every shard, those of other nodes through their
	// owners: each node sees the same keys.
	t.Run("FlowReadsEveryShard", func(t *testing.T) {
		for i := range 6 {
			r := call(t, c.live()[i%3], "POST", "/workflows/report/start", map[string]any{"workflow_id": fmt.Sprintf("flow-%d", i),
				"input": map[string]any{"customer": "flow-c", "sleep_ms": 3_600_000}})
			require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
		}
		for _, n := range c.live() {
			r := call(t, n, "GET", "/flow", nil)
			require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
			require.Nil(t, r.Body["status"], "every shard read via %s: %v", n.NodeID(), r.Body)
			runs := 0.0
			for _, k := range r.Body["keys"].([]any) {
				k := k.(map[string]any)
				if k["key"] == "flow-c" {
					runs += k["running"].(float64) + k["queued"].(float64)
				}
			}
			require.Equal(t, 6.0, runs, "via %s: %v", n.NodeID(), r.Body)
		}
	})

	t.Run("ListMergesAllShards", func(t *testing.T) {
		seen := map[string]bool{}
		cursor := ""
		for page := 0; page < 100; page++ {
			r := call(t, c.live()[1], "GET", "/workflows?page_size=7&cursor="+cursor, nil)
			require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
			for _, w := range r.Body["workflows"].([]any) {
				id := fmt.Sprint(w.(map[string]any)["execution_id"])
				require.False(t, seen[id], "no run listed twice")
				seen[id] = true
			}
			next, _ := r.Body["next_cursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		total := 0
		for _, dsn := range c.dsns {
			conn, err := pgx.Connect(ctxT(t), dsn)
			require.NoError(t, err)
			var n int
			require.NoError(t, conn.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_executions`).Scan(&n))
			conn.Close(context.Background())
			total += n
		}
		require.Equal(t, total, len(seen))
	})

	t.Run("Members", func(t *testing.T) {
		r := call(t, c.live()[0], "GET", "/cluster/members", nil)
		require.Equal(t, http.StatusOK, r.Status)
		members := r.Body["members"].([]any)
		require.Len(t, members, 3)
		var shards []float64
		for _, m := range members {
			mm := m.(map[string]any)
			require.Equal(t, "alive", mm["state"])
			require.NotEmpty(t, mm["api_addr"])
			for _, s := range mm["shards"].([]any) {
				shards = append(shards, s.(float64))
			}
		}
		slices.Sort(shards)
		require.Equal(t, []float64{0, 1, 2, 3}, shards)
	})
}

// ordersOn starts k order runs on shard through entry and waits until each
// waits for its approval.
func (c *cluster) ordersOn(t *testing.T, entry *Node, shard uint16, k int) []string {
	var ids []string
	for i := range k {
		wfID, err := ring.MintForShard(c.cat, demo.OrderName, shard, uuid.NewString)
		require.NoError(t, err)
		r := call(t, entry, "POST", "/workflows/order/start", map[string]any{"workflow_id": wfID,
			"input": map[string]any{"order_id": fmt.Sprint("o", i), "sleep_ms": 50}})
		require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
		require.Equal(t, shard, shardOf(t, r.Body["execution_id"]))
		ids = append(ids, fmt.Sprint(r.Body["execution_id"]))
	}
	for _, id := range ids {
		eventually(t, "the approval wait", 20*time.Second, func() bool { return len(c.eventTypes(t, id)) == 4 })
	}
	return ids
}

var approvedHistory = []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "TimerStarted",
	"SignalReceived", "TimerStarted", "TimerFired", "WorkflowCompleted"}

func TestClusterFailover(t *testing.T) {
	t.Run("KilledOwnerIsReplacedWithinTenSeconds", func(t *testing.T) {
		c := newCluster(t, 3, 5*time.Second)
		victim, shard := c.victim(t)
		entry := c.nodes[0]
		ids := c.ordersOn(t, entry, shard, 5)

		killed := time.Now()
		c.kill(victim)
		eventually(t, "a new owner", 10*time.Second, func() bool { return c.owner(shard) != nil })
		t.Logf("shard %d re-owned %s after the kill", shard, time.Since(killed).Round(time.Millisecond))
		// The entry routes by gossip, which may still name the victim for
		// a moment (its answer then is a retryable 503).
		owner := c.owner(shard).NodeID()
		eventually(t, "the entry to route to the new owner", 10*time.Second, func() bool {
			r := call(t, entry, "GET", "/cluster/members", nil)
			var holders []any
			for _, m := range r.Body["members"].([]any) {
				mm := m.(map[string]any)
				for _, s := range mm["shards"].([]any) {
					if uint16(s.(float64)) == shard {
						holders = append(holders, mm["node_id"])
					}
				}
			}
			return len(holders) == 1 && holders[0] == owner
		})

		for _, id := range ids {
			r := call(t, entry, "POST", "/workflows/"+id+"/signal/approved", map[string]any{"by": "ops"}, "Idempotency-Key", "approve-"+id)
			require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		}
		for _, id := range ids {
			res := call(t, entry, "GET", "/workflows/"+id+"/result?wait=20s", nil)
			require.Equal(t, "COMPLETED", res.Body["state"], "%v", res.Body)
			require.Equal(t, approvedHistory, c.eventTypes(t, id), "no duplicate events")
		}
		require.Equal(t, len(ids), c.svc.Payments.Effects(), "one charge per order")
	})

	t.Run("StaleOwnerCutFromGossipCannotCommit", func(t *testing.T) {
		// A long lease: the stale owner's renewal does not notice the loss
		// in time; only the fence in its write transaction stops it.
		c := newCluster(t, 3, time.Minute)
		vi, shard := c.victim(t)
		victim := c.nodes[vi]
		ids := c.ordersOn(t, c.nodes[0], shard, 1)
		stale, ok := victim.mgr.Engine(shard)
		require.True(t, ok)

		victim.gossip.Shutdown() // cut from gossip; still connected to PostgreSQL
		eventually(t, "a successor", 10*time.Second, func() bool {
			for i, n := range c.nodes {
				if i != vi && slices.Contains(n.Owned(), shard) {
					return true
				}
			}
			return false
		})
		before := c.eventTypes(t, ids[0])
		id, err := uuid.Parse(ids[0])
		require.NoError(t, err)
		_, err = stale.Signal(context.Background(), engine.SignalRequest{ExecutionID: id, SignalName: demo.ApprovedSignal, Payload: json.RawMessage(`{}`)})
		require.Error(t, err)
		r := callAsNode(t, victim, "POST", "/workflows/"+ids[0]+"/signal/approved", map[string]any{"by": "stale"}, api.ForwardedHeader, "test")
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%v", r.Body)
		require.Equal(t, before, c.eventTypes(t, ids[0]), "the stale owner committed nothing")
	})

	t.Run("GracefulLeaveHandsOverUnderTwoSeconds", func(t *testing.T) {
		c := newCluster(t, 3, 5*time.Second)
		li, _ := c.victim(t)
		leaver := c.nodes[li]
		shards := leaver.Owned()
		began := time.Now()
		require.NoError(t, leaver.Stop(context.Background()))
		c.nodes[li] = nil
		eventually(t, "the hand-over", 2*time.Second, func() bool {
			for _, s := range shards {
				if c.owner(s) == nil {
					return false
				}
			}
			return true
		})
		t.Logf("shards %v handed over in %s", shards, time.Since(began).Round(time.Millisecond))
	})
}

// batchResults are a batch start's per-item results.
func batchResults(t *testing.T, r reply) []map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	raw, ok := r.Body["results"].([]any)
	require.True(t, ok, "%v", r.Body)
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		out[i] = v.(map[string]any)
	}
	return out
}

// firstShard is the lowest shard of m (none: 0).
func firstShard(m map[uint16][]string) uint16 {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return 0
	}
	return keys[0]
}
