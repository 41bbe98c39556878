package node

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/membership"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type testBundle struct {
	cfg Config
	reg *harvest.Registry
}

// setup returns a config on a fresh database and data dir, with the demo
// workflows registered.
func setup(t *testing.T) *testBundle {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(demo.NewServices()).Register(reg))
	return &testBundle{
		cfg: Config{
			DataDir:     t.TempDir(),
			HTTPAddr:    "127.0.0.1:0",
			PostgresDSN: pgtest.NewDB(t),
			Logger:      zerolog.New(zerolog.NewTestWriter(t)),
		},
		reg: reg,
	}
}

// start starts a node on cfg; cleanup stops it.
func (b *testBundle) start(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := New(cfg, b.reg)
	require.NoError(t, err)
	require.NoError(t, n.Start(ctxT(t)))
	t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })
	return n
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// get fetches path from n and decodes the JSON answer.
func get(t *testing.T, n *Node, path string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, "http://"+n.Addr()+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

// leaseOwner reads the shard lease owner (empty when released).
func leaseOwner(t *testing.T, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var owner *string
	require.NoError(t, conn.QueryRow(ctxT(t), `SELECT owner_node FROM harvest_shard_lease`).Scan(&owner))
	if owner == nil {
		return ""
	}
	return *owner
}

func TestNode(t *testing.T) {
	t.Parallel()

	t.Run("ServesHealthAndReadiness", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		n := b.start(t, b.cfg)
		host, port, err := net.SplitHostPort(n.Addr())
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host)
		require.NotEqual(t, "0", port, "Addr reports the port actually bound")

		status, body := get(t, n, "/healthz")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "ok", body["status"])
		status, _ = get(t, n, "/readyz")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, n.NodeID(), leaseOwner(t, b.cfg.PostgresDSN))
	})

	t.Run("RestartKeepsNodeID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first, err := New(b.cfg, b.reg)
		require.NoError(t, err)
		require.Empty(t, first.NodeID(), "no id before Start")
		require.NoError(t, first.Start(ctxT(t)))
		id := first.NodeID()
		require.NotEmpty(t, id)
		stored, err := os.ReadFile(filepath.Join(b.cfg.DataDir, NodeIDFile))
		require.NoError(t, err)
		require.Equal(t, id, strings.TrimSpace(string(stored)))
		require.NoError(t, first.Stop(ctxT(t)))
		require.Empty(t, leaseOwner(t, b.cfg.PostgresDSN), "Stop releases the lease")
		require.Empty(t, first.Addr())

		second := b.start(t, b.cfg)
		require.Equal(t, id, second.NodeID())
		status, _ := get(t, second, "/readyz")
		require.Equal(t, http.StatusOK, status)
	})

	t.Run("RestartAfterCrashReacquiresOwnLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.start(t, b.cfg)
		// A crash leaves the lease held; simulate it by writing the lease
		// back after a clean stop.
		id := first.NodeID()
		require.NoError(t, first.Stop(ctxT(t)))
		conn, err := pgx.Connect(ctxT(t), b.cfg.PostgresDSN)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctxT(t), `UPDATE harvest_shard_lease SET owner_node = $1, expires_at = now() + interval '1 hour'`, id)
		require.NoError(t, err)

		second := b.start(t, b.cfg)
		require.Equal(t, id, leaseOwner(t, b.cfg.PostgresDSN))
		status, _ := get(t, second, "/readyz")
		require.Equal(t, http.StatusOK, status)
	})

	t.Run("ConfiguredNodeIDWins", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cfg := b.cfg
		cfg.NodeID = "node-a"
		n := b.start(t, cfg)
		require.Equal(t, "node-a", n.NodeID())
		require.Equal(t, "node-a", leaseOwner(t, cfg.PostgresDSN))
		_, err := os.Stat(filepath.Join(cfg.DataDir, NodeIDFile))
		require.ErrorIs(t, err, os.ErrNotExist, "a configured id is not persisted")
	})

	t.Run("FailedStartUndoesAndStopIsSafe", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer busy.Close()
		cfg := b.cfg
		cfg.HTTPAddr = busy.Addr().String()
		n, err := New(cfg, b.reg)
		require.NoError(t, err)
		err = n.Start(ctxT(t))
		require.ErrorContains(t, err, "listen on "+cfg.HTTPAddr)
		require.Empty(t, leaseOwner(t, cfg.PostgresDSN), "the engine started, so the failed Start released its lease")
		require.NoError(t, n.Stop(ctxT(t)))
		require.NoError(t, n.Stop(ctxT(t)))
		require.ErrorContains(t, n.Start(ctxT(t)), "already started")
	})

	t.Run("UnusableDataDir", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		cfg := b.cfg
		cfg.DataDir = file
		n, err := New(cfg, b.reg)
		require.NoError(t, err)
		require.ErrorIs(t, n.Start(ctxT(t)), ErrDataDir)
		require.NoError(t, n.Stop(ctxT(t)))
	})

	t.Run("MalformedNodeIDFile", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, os.WriteFile(filepath.Join(b.cfg.DataDir, NodeIDFile), []byte("two words\n"), 0o600))
		n, err := New(b.cfg, b.reg)
		require.NoError(t, err)
		require.ErrorIs(t, n.Start(ctxT(t)), ErrDataDir)
	})

	t.Run("StopBeforeStart", func(t *testing.T) {
		t.Parallel()
		n, err := New(Config{}, harvest.NewRegistry())
		require.NoError(t, err)
		require.NoError(t, n.Stop(context.Background()))
		require.Empty(t, n.Addr())
	})
}

func TestConfig(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		c := Config{}.withDefaults()
		require.Equal(t, DataDirDefault, c.DataDir)
		require.Equal(t, HTTPAddrDefault, c.HTTPAddr)
		require.Equal(t, 24*time.Hour, c.IdempotencyWindow)
		require.Equal(t, int64(1<<20), c.MaxBodyBytes)
		require.Empty(t, c.PostgresDSN, "managed PostgreSQL by default")
		require.Zero(t, c.ShardID)
	})

	t.Run("Validate", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name string
			cfg  Config
			want string // error substring; empty means valid
		}{
			{"Zero", Config{}, ""},
			{"Full", Config{NodeID: "n1", DataDir: "/var/lib/harvest", HTTPAddr: ":7233",
				PostgresDSN: "postgres://u@localhost/harvest", IdempotencyWindow: time.Hour, MaxBodyBytes: 10, ShardID: 3}, ""},
			{"NodeIDWithSpace", Config{NodeID: "a b"}, "node id"},
			{"NodeIDTooLong", Config{NodeID: strings.Repeat("x", maxNodeIDLen+1)}, "node id"},
			{"HTTPAddrWithoutPort", Config{HTTPAddr: "localhost"}, "http addr"},
			{"BadDSN", Config{PostgresDSN: "postgres://%zz"}, "postgres dsn"},
			{"NegativeWindow", Config{IdempotencyWindow: -time.Second}, "idempotency window"},
			{"NegativeBody", Config{MaxBodyBytes: -1}, "max body bytes"},
			{"NegativeRate", Config{Limits: api.Limits{Rate: -1}}, "rate"},
			{"ReservedShard", Config{ShardID: 0xFFFF}, "reserved"},
			{"UnknownAuthMode", Config{Auth: AuthConfig{Mode: "sometimes"}}, "auth mode"},
			{"TokensOnStaticShards", Config{Auth: AuthConfig{Mode: AuthTokens}, Gossip: &membership.Config{}}, "raft catalog"},
			{"TokensStandalone", Config{Auth: AuthConfig{Mode: AuthTokens}}, ""},
			{"GossipWithoutClusterKey", Config{Gossip: &membership.Config{}}, "the cluster key is required with gossip"},
			{"GossipWithClusterKey", Config{Gossip: &membership.Config{}, ClusterKey: clusterkeytest.Key()}, ""},
		} {
			err := tc.cfg.Validate()
			if tc.want == "" {
				require.NoError(t, err, tc.name)
				continue
			}
			require.ErrorContains(t, err, tc.want, tc.name)
		}
		require.ErrorIs(t, Config{Gossip: &membership.Config{}}.Validate(), ErrNoClusterKey)
	})

	t.Run("NewRejectsInvalidConfig", func(t *testing.T) {
		t.Parallel()
		_, err := New(Config{HTTPAddr: "nope"}, harvest.NewRegistry())
		require.ErrorContains(t, err, "node config")
		_, err = New(Config{}, nil)
		require.ErrorContains(t, err, "registry")
	})
}
