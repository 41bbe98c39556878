package outbox

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// goSig ends waitWF.
var goSig = harvest.NewSignal[string]("go")

// waitWF waits for its go signal and returns it.
var waitWF = harvest.NewWorkflow("outbox_wait", func(ctx harvest.Context, _ struct{}) (string, error) { return goSig.Receive(ctx) })

// orderWF is the workflow the application starts for each order.
var orderWF = harvest.NewWorkflow("outbox_order", func(_ harvest.Context, in map[string]int) (int, error) { return in["order"], nil })

// bundle is a Harvest node (engine and API on their own database) and the
// application's database, migrated for the outbox, with its orders table.
type bundle struct {
	harvest *pgxpool.Pool
	app     *pgxpool.Pool
	api     *client.Client
}

func setup(t *testing.T) *bundle {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, reg.Register(orderWF, waitWF))
	b := &bundle{harvest: pgtest.NewPool(t)}
	e, err := engine.New(b.harvest, reg, engine.Config{ShardID: 0, NodeID: "t", PollInterval: 20 * time.Millisecond, Logger: zerolog.Nop()})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(e.Stop)
	srv, err := api.New(api.Config{}, api.SingleShard(e))
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	b.api = client.New(hs.URL)
	b.app, err = pgxpool.New(context.Background(), pgtest.NewEmptyDB(t))
	require.NoError(t, err)
	t.Cleanup(b.app.Close)
	require.NoError(t, Migrate(context.Background(), b.app))
	require.NoError(t, Migrate(context.Background(), b.app), "a second Migrate applies nothing")
	_, err = b.app.Exec(context.Background(), `CREATE TABLE orders (id integer PRIMARY KEY)`)
	require.NoError(t, err)
	return b
}

// order writes order i and its workflow's start in one transaction, and
// commits it or rolls it back.
func (b *bundle) order(ctx context.Context, t *testing.T, i int, commit bool) {
	tx, err := b.app.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO orders (id) VALUES ($1)`, i)
	require.NoError(t, err)
	fresh, err := Start(ctx, tx, orderWF.Name(), fmt.Sprint("order-", i), map[string]int{"order": i})
	require.NoError(t, err)
	require.True(t, fresh)
	if commit {
		require.NoError(t, tx.Commit(ctx))
	}
}

// runsByKey counts the Harvest runs of each start key.
func (b *bundle) runsByKey(t *testing.T) map[string]int {
	t.Helper()
	rows, err := b.harvest.Query(context.Background(), `
		SELECT idempotency_key, count(*) FROM harvest_executions WHERE workflow_name = $1 GROUP BY 1`, orderWF.Name())
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		require.NoError(t, rows.Scan(&k, &n))
		out[k] = n
	}
	require.NoError(t, rows.Err())
	return out
}

var errCrashed = errors.New("the relay died between the delivery and its mark")

// TestRelayDeliversTheCommittedRowsOnce writes 1,000 orders, half of
// them rolled back, and relays them with a relay that dies after every
// 37th delivery, before its mark; a new relay takes over each time.
// Exactly the 500 committed orders start, once each.
func TestRelayDeliversTheCommittedRowsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i := range 1000 {
		b.order(ctx, t, i, i%2 == 0)
	}
	var delivered, crashes atomic.Int64
	cfg := Config{Pool: b.app, Target: b.api, BatchSize: 20, afterDeliver: func(int64) error {
		if delivered.Add(1)%37 == 0 {
			crashes.Add(1)
			return errCrashed
		}
		return nil
	}}
	deadline := time.Now().Add(8 * time.Minute)
	for left := -1; left != 0; {
		require.True(t, time.Now().Before(deadline), "%d rows left", left)
		r, err := NewRelay(cfg) // a fresh relay, as after a crash
		require.NoError(t, err)
		_, err = r.Deliver(ctx)
		if err != nil {
			require.ErrorIs(t, err, errCrashed)
		}
		require.NoError(t, b.app.QueryRow(ctx, `SELECT count(*) FROM harvest_app_outbox WHERE delivered_at IS NULL`).Scan(&left))
	}
	runs := b.runsByKey(t)
	require.Len(t, runs, 500, "the committed orders only")
	for i := 0; i < 1000; i += 2 {
		require.Equal(t, 1, runs[fmt.Sprint("order-", i)], "order %d started once", i)
	}
	require.Greater(t, crashes.Load(), int64(10), "the relay died after a delivery, more than once")
	require.Greater(t, delivered.Load(), int64(500), "and those rows were delivered again")
}

// TestRelayMarksARefusedRowFailed: a start of an unknown workflow is a
// definite refusal: failed, with its error, never retried; a duplicate
// row in the same transaction is not written.
func TestRelayMarksARefusedRowFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	fresh, err := Start(ctx, b.app, "no_such_workflow", "k-1", nil)
	require.NoError(t, err)
	require.True(t, fresh)
	again, err := Start(ctx, b.app, "no_such_workflow", "k-1", nil)
	require.NoError(t, err)
	require.False(t, again, "one row per workflow and key")
	_, err = Start(ctx, b.app, orderWF.Name(), "", nil)
	require.ErrorIs(t, err, ErrEmptyKey)
	_, err = Signal(ctx, b.app, "", "approved", "k", nil)
	require.ErrorIs(t, err, ErrEmptyName)
	r, err := NewRelay(Config{Pool: b.app, Target: b.api})
	require.NoError(t, err)
	n, err := r.Deliver(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var failed bool
	var last string
	require.NoError(t, b.app.QueryRow(ctx, `SELECT failed_at IS NOT NULL, last_error FROM harvest_app_outbox`).Scan(&failed, &last))
	require.True(t, failed)
	require.Contains(t, last, "no_such_workflow")
	n, err = r.Deliver(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a failed row is not retried")
}

// TestRelaySignalsOnce signals a waiting run through the outbox with a
// relay that dies after the delivery, before its mark: the next relay
// delivers it again, and the run has one SignalReceived; a new key to
// the closed run is then refused for good.
func TestRelaySignalsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	res, err := b.api.Start(ctx, waitWF.Name(), client.StartRequest{})
	require.NoError(t, err)
	_, err = Signal(ctx, b.app, res.ExecutionID, goSig.Name(), "go-1", "now")
	require.NoError(t, err)
	crashed := false
	r, err := NewRelay(Config{Pool: b.app, Target: b.api, afterDeliver: func(int64) error {
		if crashed {
			return nil
		}
		crashed = true
		return errCrashed
	}})
	require.NoError(t, err)
	_, err = r.Deliver(ctx)
	require.ErrorIs(t, err, errCrashed)
	n, err := r.Deliver(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	out, _, err := b.api.Result(ctx, res.ExecutionID, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, "COMPLETED", out.State)
	var signals int
	require.NoError(t, b.harvest.QueryRow(ctx, `SELECT count(*) FROM harvest_events WHERE execution_id = $1 AND event_type = 'SignalReceived'`,
		res.ExecutionID).Scan(&signals))
	require.Equal(t, 1, signals, "delivered twice, received once")

	_, err = Signal(ctx, b.app, res.ExecutionID, goSig.Name(), "go-2", "again")
	require.NoError(t, err)
	_, err = r.Deliver(ctx)
	require.NoError(t, err)
	var failed bool
	require.NoError(t, b.app.QueryRow(ctx, `SELECT failed_at IS NOT NULL FROM harvest_app_outbox WHERE idempotency_key = 'go-2'`).Scan(&failed))
	require.True(t, failed, "a new key to a closed run is refused for good")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"NoPool", Config{Target: client.New("http://x")}, false},
		{"NoTarget", Config{Pool: &pgxpool.Pool{}}, false},
		{"NegativePoll", Config{Pool: &pgxpool.Pool{}, Target: client.New("http://x"), Poll: -1}, false},
		{"Defaults", Config{Pool: &pgxpool.Pool{}, Target: client.New("http://x")}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.ok, c.cfg.Validate() == nil)
		})
	}
}
