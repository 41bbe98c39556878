package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

// shardJSON is a reachable draining shard as the admin routes send it.
const shardJSON = `{"shard_id":1,"state":"draining","database":"postgres://u:xxxxx@h/b","added_at":"2026-01-01T00:00:00Z",
	"state_since":"2026-01-02T00:00:00Z","owner":"n2","reachable":true,"zone":"a",
	"status":{"shard_id":1,"claims_in_window":3,"newest_claim_at":"2026-01-02T10:00:00Z","runs_in_window":5,
	"newest_run_at":"2026-01-02T10:00:01Z","running_executions":2,"window_passes_at":"2026-01-03T10:00:01Z",
	"now":"2026-01-02T12:00:00Z"}}`

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func ptrTime(s string) *time.Time {
	t := at(s)
	return &t
}

// wantShard is shardJSON decoded, without Raw.
var wantShard = client.Shard{
	ShardID: 1, State: client.ShardDraining, Database: "postgres://u:xxxxx@h/b", AddedAt: at("2026-01-01T00:00:00Z"),
	StateSince: at("2026-01-02T00:00:00Z"), Owner: "n2", Reachable: true,
	Status: &client.DrainStatus{
		ClaimsInWindow: 3, NewestClaimAt: ptrTime("2026-01-02T10:00:00Z"), RunsInWindow: 5,
		NewestRunAt: ptrTime("2026-01-02T10:00:01Z"), RunningExecutions: 2, WindowPassesAt: ptrTime("2026-01-03T10:00:01Z"),
		Now: at("2026-01-02T12:00:00Z"),
	},
}

// requireShard compares a decoded shard with want and checks its Raw.
func requireShard(t *testing.T, want client.Shard, got *client.Shard) {
	t.Helper()
	require.NotNil(t, got)
	require.Contains(t, string(got.Raw), `"zone":"a"`, "Raw keeps fields the struct lacks")
	g := *got
	g.Raw = nil
	require.Equal(t, want, g)
}

func TestShards(t *testing.T) {
	t.Parallel()

	t.Run("DecodesTheCatalog", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"shards":[`+shardJSON+`,{"shard_id":2,"state":"writable","reachable":false,"error":"down","zone":"a"}],
			"epochs":[{"number":4,"since":"2026-01-02T00:00:00Z","readable":[1,2],"writable":[2]}],
			"idempotency_window":"24h0m0s","leader":"n1"}`)
		cat, err := c.Shards(ctxT(t))
		require.NoError(t, err)
		r := b.next(t)
		require.Equal(t, http.MethodGet, r.method)
		require.Equal(t, "/api/harvest/admin/shards", r.path)
		require.Len(t, cat.Shards, 2)
		requireShard(t, wantShard, &cat.Shards[0])
		requireShard(t, client.Shard{ShardID: 2, State: client.ShardWritable, Error: "down"}, &cat.Shards[1])
		require.Equal(t, []client.Epoch{{Number: 4, Since: at("2026-01-02T00:00:00Z"), Readable: []uint16{1, 2}, Writable: []uint16{2}}}, cat.Epochs)
		require.Equal(t, client.Duration(24*time.Hour), cat.Window)
		require.Equal(t, "n1", cat.Leader)
		require.Contains(t, string(cat.Raw), `"idempotency_window":"24h0m0s"`)
		require.Equal(t, &cat.Shards[1], cat.Find(2))
		require.Nil(t, cat.Find(7))
	})

	t.Run("BadWindow", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusOK, `{"shards":[],"idempotency_window":"a day"}`)
		_, err := c.Shards(ctxT(t))
		require.ErrorContains(t, err, `duration "a day"`)
	})

	t.Run("StaticShardsAnswerNotFound", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusNotFound, `{"error":"this node has no shard catalog to administer (static shards)","code":"not_found"}`)
		_, err := c.Shards(ctxT(t))
		require.ErrorIs(t, err, client.ErrNotFound)
	})
}

// TestOneShardAnswers: the routes that answer one shard.
func TestOneShardAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method, path string
		call               func(ctx context.Context, c *client.Client) (*client.Shard, error)
	}{
		{"Shard", http.MethodGet, "/api/harvest/admin/shards/1",
			func(ctx context.Context, c *client.Client) (*client.Shard, error) { return c.Shard(ctx, 1) }},
		{"UndrainShard", http.MethodPost, "/api/harvest/admin/shards/1/undrain",
			func(ctx context.Context, c *client.Client) (*client.Shard, error) { return c.UndrainShard(ctx, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, b := fake(t, http.StatusOK, shardJSON)
			sh, err := tc.call(ctxT(t), c)
			require.NoError(t, err)
			r := b.next(t)
			require.Equal(t, tc.method, r.method)
			require.Equal(t, tc.path, r.path)
			require.False(t, r.hasBody)
			requireShard(t, wantShard, sh)
		})
	}
}

func TestAddShard(t *testing.T) {
	t.Parallel()

	t.Run("Shape", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusCreated, shardJSON)
		sh, err := c.AddShard(ctxT(t), 0, "postgres://u:pw@h/b")
		require.NoError(t, err)
		r := b.next(t)
		require.Equal(t, http.MethodPost, r.method)
		require.Equal(t, "/api/harvest/admin/shards", r.path)
		require.Equal(t, map[string]any{"shard_id": float64(0), "dsn": "postgres://u:pw@h/b"}, bodyMap(t, r.body),
			"shard 0 is sent, not omitted")
		requireShard(t, wantShard, sh)
	})

	t.Run("EmptyDSNIsNotSent", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusCreated, shardJSON)
		_, err := c.AddShard(ctxT(t), 2, "")
		require.ErrorIs(t, err, client.ErrInvalid)
		require.Empty(t, b.reqs)
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			status int
			body   string
			want   error
		}{
			{http.StatusUnprocessableEntity, `{"error":"shard database unreachable: shard 2: dial","code":"shard_unreachable"}`, client.ErrShardUnreachable},
			{http.StatusConflict, `{"error":"invalid shard state transition","code":"conflict"}`, client.ErrConflict},
			{http.StatusBadRequest, `{"error":"shard_id must be an integer from 0 to 65534","code":"invalid_argument"}`, client.ErrInvalid},
		} {
			c, _ := fake(t, tc.status, tc.body)
			_, err := c.AddShard(ctxT(t), 2, "postgres://h/c")
			require.ErrorIs(t, err, tc.want, tc.body)
		}
	})
}

func TestDrainShard(t *testing.T) {
	t.Parallel()

	t.Run("Forced", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusAccepted, `{"shard":`+shardJSON+`,"forced":true,"risk":"shard 1 is the last writable shard"}`)
		d, err := c.DrainShard(ctxT(t), 1, true)
		require.NoError(t, err)
		r := b.next(t)
		require.Equal(t, http.MethodPost, r.method)
		require.Equal(t, "/api/harvest/admin/shards/1/drain", r.path)
		require.Equal(t, map[string]any{"force": true}, bodyMap(t, r.body))
		requireShard(t, wantShard, &d.Shard)
		require.True(t, d.Forced)
		require.Equal(t, "shard 1 is the last writable shard", d.Risk)
		require.Contains(t, string(d.Raw), `"forced":true`)
	})

	t.Run("UnforcedSendsFalse", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusAccepted, `{"shard":`+shardJSON+`,"forced":false}`)
		d, err := c.DrainShard(ctxT(t), 1, false)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"force": false}, bodyMap(t, b.next(t).body))
		require.False(t, d.Forced)
		require.Empty(t, d.Risk)
	})

	t.Run("Unsafe", func(t *testing.T) {
		t.Parallel()
		const msg = "unsafe drain: shard 1 is the last writable shard: new starts would have nowhere to go (use --force to drain anyway)"
		c, _ := fake(t, http.StatusConflict, `{"error":"`+msg+`","code":"unsafe_drain"}`)
		_, err := c.DrainShard(ctxT(t), 1, false)
		require.ErrorIs(t, err, client.ErrUnsafeDrain)
		require.NotErrorIs(t, err, client.ErrConflict, "a known code decides the class, not the 409")
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, msg, apiErr.Message)
	})

	t.Run("UnknownShard", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusNotFound, `{"error":"shard 9: unknown shard","code":"not_found"}`)
		_, err := c.DrainShard(ctxT(t), 9, false)
		require.ErrorIs(t, err, client.ErrNotFound)
	})
}

func TestRaftPeers(t *testing.T) {
	t.Parallel()

	t.Run("Decodes", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"peers":[{"id":"n1","addr":"10.0.0.1:8300","voter":true,"leader":true},
			{"id":"n4","addr":"10.0.0.4:8300","voter":false,"leader":false}]}`)
		peers, err := c.RaftPeers(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, "/api/harvest/admin/raft/peers", b.next(t).path)
		require.Len(t, peers, 2)
		require.JSONEq(t, `{"id":"n4","addr":"10.0.0.4:8300","voter":false,"leader":false}`, string(peers[1].Raw))
		peers[0].Raw, peers[1].Raw = nil, nil
		require.Equal(t, []client.Peer{{ID: "n1", Addr: "10.0.0.1:8300", Voter: true, Leader: true}, {ID: "n4", Addr: "10.0.0.4:8300"}}, peers)
	})

	t.Run("NoLeader", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusServiceUnavailable, `{"error":"no raft leader known","code":"unavailable"}`)
		_, err := c.RaftPeers(ctxT(t))
		require.ErrorIs(t, err, client.ErrUnavailable)
	})
}

func TestRemovePeer(t *testing.T) {
	t.Parallel()

	t.Run("Shape", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"ok":true,"removed":"n 3"}`)
		require.NoError(t, c.RemovePeer(ctxT(t), "n 3"))
		r := b.next(t)
		require.Equal(t, http.MethodDelete, r.method)
		require.Equal(t, "/api/harvest/admin/raft/peers/n%203", r.path)
	})

	t.Run("EmptyIDIsNotSent", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{}`)
		require.ErrorIs(t, c.RemovePeer(ctxT(t), ""), client.ErrInvalid)
		require.Empty(t, b.reqs)
	})

	t.Run("NoCatalog", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusNotFound, `{"error":"this node has no shard catalog to administer (static shards)","code":"not_found"}`)
		require.ErrorIs(t, c.RemovePeer(ctxT(t), "n3"), client.ErrNotFound)
	})
}

// TestServerWithoutCatalog: a node on static shards has no catalog to
// administer, and says so.
func TestServerWithoutCatalog(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	_, err := b.api.Shards(ctxT(t))
	require.ErrorIs(t, err, client.ErrNotFound)
	require.ErrorContains(t, err, "no shard catalog")
	_, err = b.api.DrainShard(ctxT(t), 0, false)
	require.ErrorIs(t, err, client.ErrNotFound)
	_, err = b.api.RaftPeers(ctxT(t))
	require.ErrorIs(t, err, client.ErrNotFound)
}
