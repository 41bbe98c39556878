package node

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/ring"
)

// hostLog records the host of every start request a client sends.
type hostLog struct {
	mu    sync.Mutex
	hosts []string
	next  http.RoundTripper
}

func (h *hostLog) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.hosts = append(h.hosts, req.Method+" "+req.URL.Host+" "+req.URL.Path)
	h.mu.Unlock()
	return h.next.RoundTrip(req)
}

// since returns the requests logged after the first n.
func (h *hostLog) since(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.hosts[n:])
}

func (h *hostLog) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.hosts)
}

// keyFor is an idempotency key that (name, key) places on shard in cat.
func keyFor(t *testing.T, cat ring.Catalog, name string, shard uint16, prefix string) string {
	t.Helper()
	for i := range 1000 {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if s, err := ring.PickShard(cat, name, k); err == nil && s == shard {
			return k
		}
	}
	require.FailNow(t, "no key places on the shard")
	return ""
}

// TestRoutingClient: a client with WithRouting sends keyed starts and
// calls by execution id straight to the shard's owner; when the owner is
// killed its next start falls back to the base node (and the new owner
// then), and a drained shard's keys still start once; a repeat of each
// key answers the run it started.
func TestRoutingClient(t *testing.T) {
	c := newRaftCluster(t, 3, 2, time.Hour)
	c.waitStable()
	rec := &hostLog{next: http.DefaultTransport}
	base := c.nodes[0]
	cl := client.New("http://"+base.Addr(), client.WithHTTPClient(&http.Client{Transport: rec}),
		client.WithRouting(100*time.Millisecond))
	ctx := context.Background()
	start := func(t *testing.T, key string) *client.StartResponse {
		t.Helper()
		res, err := cl.Start(ctx, "noop_chain", client.StartRequest{IdempotencyKey: key, Input: map[string]any{"activities": 0}})
		require.NoError(t, err, "start %s", key)
		return res
	}
	shardOfRun := func(t *testing.T, id string) uint16 {
		t.Helper()
		u, err := engine.ParseExecutionID(id)
		require.NoError(t, err)
		return engine.ShardOf(u)
	}
	startPath := "/api/harvest/workflows/noop_chain/start"

	t.Run("KeyedStartsGoToTheOwner", func(t *testing.T) {
		for i := range 12 {
			from := rec.len()
			res := start(t, fmt.Sprintf("direct-%d", i))
			owner := c.owner(shardOfRun(t, res.ExecutionID))
			require.NotNil(t, owner)
			require.Equal(t, []string{"POST " + owner.Addr() + " " + startPath}, filterPath(rec.since(from), startPath),
				"start %d went to its shard's owner %s", i, owner.NodeID())
			from = rec.len()
			_, err := cl.Describe(ctx, res.ExecutionID)
			require.NoError(t, err)
			require.Contains(t, rec.since(from)[0], owner.Addr(), "describe by execution id")
		}
	})

	t.Run("AKilledOwnerFallsBackToTheBase", func(t *testing.T) {
		i, shard := c.victim(t)
		dead := c.nodes[i].Addr()
		key := keyFor(t, c.cat, "noop_chain", shard, "killed")
		c.kill(i)
		from := rec.len()
		var first *client.StartResponse // the table still names the dead owner
		eventually(t, "the start to succeed once the shard moved", 30*time.Second, func() bool {
			res, err := cl.Start(ctx, "noop_chain", client.StartRequest{IdempotencyKey: key, Input: map[string]any{"activities": 0}})
			first = res
			return err == nil
		})
		sent := filterPath(rec.since(from), startPath)
		require.Equal(t, "POST "+dead+" "+startPath, sent[0], "tried the owner it knew first")
		require.Contains(t, sent[1], base.Addr(), "then the base node")
		again := start(t, key)
		require.Equal(t, first.ExecutionID, again.ExecutionID, "the same run")
		require.True(t, again.Deduplicated != nil && *again.Deduplicated, "deduplicated")
		require.Equal(t, 1, c.runsCount(t, "idempotency_key = $1", key), "one run")
		c.waitStable()
		eventually(t, "starts to go to the new owner", 20*time.Second, func() bool {
			from := rec.len()
			start(t, key)
			sent := filterPath(rec.since(from), startPath)
			return len(sent) == 1 && sent[0] == "POST "+c.owner(shard).Addr()+" "+startPath
		})
	})

	t.Run("ADrainedShardsKeysStartOnce", func(t *testing.T) {
		before := c.cat
		key := keyFor(t, before, "noop_chain", 1, "drained")
		d := call(t, base, "POST", "/admin/shards/1/drain", nil)
		require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
		// Every live node places by the drained catalog (a node that has
		// not applied it yet would still place the key on shard 1); the
		// client's own table may still name shard 1's owner.
		eventually(t, "every live node applied the drain", 10*time.Second, func() bool {
			for _, nd := range c.live() {
				if slices.Contains(nd.admin.Catalog().Current().Writable, 1) {
					return false
				}
			}
			return true
		})
		first := start(t, key) // a table still placing on shard 1, or a fresh one
		require.Equal(t, uint16(0), shardOfRun(t, first.ExecutionID), "placed on the writable shard")
		again := start(t, key)
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.Equal(t, 1, c.runsCount(t, "idempotency_key = $1", key), "one run")
	})
}

// filterPath keeps the logged requests of path.
func filterPath(logged []string, path string) []string {
	var out []string
	for _, l := range logged {
		if len(l) >= len(path) && l[len(l)-len(path):] == path {
			out = append(out, l)
		}
	}
	return out
}

// fixedView is a view of fixed members.
type fixedView []membership.Member

func (v fixedView) Alive() []membership.Member   { return v }
func (v fixedView) Members() []membership.Member { return v }
func (v fixedView) Changed() <-chan struct{}     { return nil }

// TestClientURL: the routing names an owner by the address it advertises
// to clients (--advertise-client) when it has one, else by its API address.
func TestClientURL(t *testing.T) {
	alive := func(id, api, client string) membership.Member {
		return membership.Member{Meta: membership.Meta{NodeID: id, APIAddr: api, ClientAddr: client}, State: membership.StateAlive}
	}
	info := clusterInfo{&router{view: fixedView{alive("n1", "10.0.0.1:7233", "203.0.113.1:443"), alive("n2", "10.0.0.2:7233", "")}}}
	for _, tc := range []struct {
		name, id, url, want string
	}{
		{"AdvertisedClientAddress", "n1", "http://10.0.0.1:7233", "http://203.0.113.1:443"},
		{"NoClientAddress", "n2", "http://10.0.0.2:7233", "http://10.0.0.2:7233"},
		{"UnknownOwner", "n9", "", ""},
		{"ServedHere", "n1", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, info.clientURL(tc.id, tc.url))
		})
	}
	info.r.secure = true
	require.Equal(t, "https://203.0.113.1:443", info.clientURL("n1", "https://10.0.0.1:7233"), "with TLS")
}
