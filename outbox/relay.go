package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/client"
)

// Target is where a Relay delivers: a *client.Client.
type Target interface {
	Start(ctx context.Context, name string, req client.StartRequest) (*client.StartResponse, error)
	Signal(ctx context.Context, executionID, signal string, payload any, opts client.SignalOptions) (*client.SignalResponse, error)
}

// Defaults of a Config.
const (
	PollDefault      = time.Second
	BatchSizeDefault = 100
	RetryMaxDefault  = time.Minute
)

// Config configures a Relay.
type Config struct {
	// Pool is the application's database (required): a *pgxpool.Pool.
	Pool Beginner
	// Target delivers the rows (required): a *client.Client.
	Target Target
	// Poll is how often an idle relay looks for rows (default PollDefault).
	Poll time.Duration
	// BatchSize is the rows one transaction delivers (default
	// BatchSizeDefault).
	BatchSize int
	// RetryMax caps the backoff of a row whose delivery failed for now
	// (default RetryMaxDefault).
	RetryMax time.Duration
	// Logger logs the deliveries that fail (default: none).
	Logger zerolog.Logger

	// afterDeliver, in tests, runs after a row's delivery and before its
	// mark: an error stops the batch there, as a crash would.
	afterDeliver func(id int64) error
}

// Validate reports a missing Pool or Target, or a negative setting.
func (c Config) Validate() error {
	switch {
	case c.Pool == nil || c.Target == nil:
		return errors.New("outbox: a relay needs a Pool and a Target")
	case c.Poll < 0 || c.BatchSize < 0 || c.RetryMax < 0:
		return errors.New("outbox: Poll, BatchSize and RetryMax must not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Poll = cmp.Or(c.Poll, PollDefault)
	c.BatchSize = cmp.Or(c.BatchSize, BatchSizeDefault)
	c.RetryMax = cmp.Or(c.RetryMax, RetryMaxDefault)
	return c
}

// Relay delivers the outbox's committed rows (see the package doc).
type Relay struct {
	cfg    Config
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRelay makes a relay; Start runs it.
func NewRelay(cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg.withDefaults()}, nil
}

// Start runs the relay until Stop or ctx's end.
func (r *Relay) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go r.run(ctx, r.done)
}

// Stop stops the relay and waits for its batch in flight to end.
func (r *Relay) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel = nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run delivers batches while there are rows, then waits a Poll.
func (r *Relay) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for ctx.Err() == nil {
		n, err := r.Deliver(ctx)
		if err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn().Err(err).Msg("outbox batch failed")
		}
		if n == r.cfg.BatchSize && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.cfg.Poll):
		}
	}
}

// Deliver delivers one batch of due rows in one transaction and returns
// how many it handled (delivered, failed for good, or put off).
func (r *Relay) Deliver(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		rows, err := claim(ctx, tx, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		for _, row := range rows {
			if err := r.deliverOne(ctx, tx, row); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// claim locks up to limit due rows, oldest first.
func claim(ctx context.Context, tx pgx.Tx, limit int) ([]row, error) {
	rs, err := tx.Query(ctx, `
		SELECT id, kind, workflow_name, execution_id, idempotency_key, workflow_id, signal_name, coalesce(payload, 'null'), attempts
		  FROM harvest_app_outbox
		 WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
		 ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: claim rows: %w", err)
	}
	return pgx.CollectRows(rs, func(s pgx.CollectableRow) (row, error) {
		var r row
		err := s.Scan(&r.id, &r.kind, &r.workflow, &r.executionID, &r.key, &r.workflowID, &r.signal, &r.payload, &r.attempts)
		return r, err
	})
}

// deliverOne delivers row and records its outcome in tx.
func (r *Relay) deliverOne(ctx context.Context, tx pgx.Tx, row row) error {
	execID, err := r.send(ctx, row)
	if err == nil && r.cfg.afterDeliver != nil {
		if herr := r.cfg.afterDeliver(row.id); herr != nil {
			return herr
		}
	}
	switch {
	case err == nil:
		_, err = tx.Exec(ctx, `UPDATE harvest_app_outbox SET delivered_at = now(), attempts = attempts + 1, result_execution_id = $2,
			last_error = NULL WHERE id = $1`, row.id, execID)
	case definite(err):
		r.cfg.Logger.Warn().Err(err).Int64("row_id", row.id).Msg("outbox row refused")
		_, err = tx.Exec(ctx, `UPDATE harvest_app_outbox SET failed_at = now(), attempts = attempts + 1, last_error = $2 WHERE id = $1`,
			row.id, err.Error())
	default:
		wait := backoff(row.attempts, r.cfg.RetryMax)
		_, err = tx.Exec(ctx, `UPDATE harvest_app_outbox SET attempts = attempts + 1, last_error = $2,
			next_attempt_at = now() + $3 * interval '1 millisecond' WHERE id = $1`, row.id, err.Error(), wait.Milliseconds())
	}
	if err != nil {
		return fmt.Errorf("outbox: record row %d: %w", row.id, err)
	}
	return nil
}

// send performs row as a keyed start or signal and returns the run that
// answered.
func (r *Relay) send(ctx context.Context, row row) (string, error) {
	if row.kind == kindSignal {
		res, err := r.cfg.Target.Signal(ctx, row.executionID, row.signal, row.payload, client.SignalOptions{IdempotencyKey: row.key})
		if err != nil {
			return "", err
		}
		return cmp.Or(res.CurrentExecutionID, res.ExecutionID), nil
	}
	res, err := r.cfg.Target.Start(ctx, row.workflow, client.StartRequest{WorkflowID: row.workflowID, Input: row.payload, IdempotencyKey: row.key})
	if err != nil {
		return "", err
	}
	return res.ExecutionID, nil
}

// definite reports whether err is a final refusal: a 4xx other than 408
// and 429.
func definite(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status >= 400 && e.Status < 500 &&
		e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

// backoff is the wait after a row's attempts-th failure: a second,
// doubling, up to max.
func backoff(attempts int, max time.Duration) time.Duration {
	d := time.Second
	for range min(attempts, 20) {
		d *= 2
	}
	return min(d, max)
}
