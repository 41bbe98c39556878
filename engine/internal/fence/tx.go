package fence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrTxCommitted: fenced work sent a statement after its transaction's
// COMMIT went out with CommitWith; it would run outside the transaction.
var ErrTxCommitted = errors.New("statement after the transaction's commit")

// Tx is what fenced work runs its statements on (withFencedBatch): a
// transaction whose BEGIN goes out with its first batch (the fence) and
// whose COMMIT may go out with its last (CommitWith), so that
// neither costs a round trip of its own. Under load a round trip is mostly
// waiting to be scheduled, on both sides: a start batch spent a fifth of
// its time on its BEGIN and its COMMIT alone.
type Tx struct {
	conn *pgxpool.Conn
	sent bool // the COMMIT went out
	// ahead is the clock's offset for the whole transaction: its
	// workflow time is now() + ahead (see the engine's clock.go).
	ahead time.Duration
}

// NewTx makes a Tx on conn, whose BEGIN the caller queues on the first
// batch it sends; ahead is the transaction's clock offset.
func NewTx(conn *pgxpool.Conn, ahead time.Duration) *Tx { return &Tx{conn: conn, ahead: ahead} }

// Ahead is the transaction's clock offset: its workflow time is
// now() + Ahead().
func (t *Tx) Ahead() time.Duration { return t.ahead }

func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.sent {
		return pgconn.CommandTag{}, ErrTxCommitted
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.sent {
		return nil, ErrTxCommitted
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.sent {
		return errRow{ErrTxCommitted}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.sent {
		return errBatchResults{ErrTxCommitted}
	}
	return t.conn.SendBatch(ctx, b)
}

// CommitWith sends b and then COMMIT in one round trip. Fenced work calls
// it last, for its final writes; withFencedBatch then commits nothing more.
//
// Once sent, the COMMIT runs whether or not the sender waits for it, so
// the round trip, once begun, ignores ctx's cancellation (an engine
// stopping, a caller gone) and keeps only its deadline: cutting it short
// would report a committed batch as failed, and its requests would be
// retried as if nothing had been written. Only a deadline or a lost
// connection leaves the outcome unknown, as for any COMMIT. So does an
// error of one of b's own result callbacks (a scan, an invariant check):
// the server has run the COMMIT behind it all the same.
func (t *Tx) CommitWith(ctx context.Context, b *pgx.Batch) error {
	if t.sent {
		return ErrTxCommitted
	}
	if err := ctx.Err(); err != nil {
		return err // not sent: Release rolls back
	}
	b.Queue(`COMMIT`).Exec(committed)
	t.sent = true
	sendCtx, cancel := uncancelled(ctx)
	defer cancel()
	return t.conn.SendBatch(sendCtx, b).Close()
}

// uncancelled is ctx without its cancellation but with its deadline: for
// a round trip that carries a COMMIT.
func uncancelled(ctx context.Context) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), deadline)
	}
	return context.WithoutCancel(ctx), func() {}
}

// committed refuses a COMMIT that rolled back: it cannot happen, since a
// failed statement ends the batch before its COMMIT, but a success must
// mean a commit.
func committed(tag pgconn.CommandTag) error {
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Finish commits the transaction unless CommitWith did; like CommitWith,
// it is not cut short once its COMMIT is on its way.
func (t *Tx) Finish(ctx context.Context) error {
	if t.sent {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t.sent = true
	sendCtx, cancel := uncancelled(ctx)
	defer cancel()
	tag, err := t.conn.Exec(sendCtx, `COMMIT`)
	if err != nil {
		return err
	}
	return committed(tag)
}

// Release rolls back what is still open, then hands the connection back
// to the pool, which closes it if it is still in a transaction.
func (t *Tx) Release(ctx context.Context) {
	pc := t.conn.Conn().PgConn()
	if !pc.IsClosed() && pc.TxStatus() != 'I' {
		_, _ = t.conn.Exec(ctx, `ROLLBACK`)
	}
	t.conn.Release()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errBatchResults struct{ err error }

func (r errBatchResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, r.err }
func (r errBatchResults) Query() (pgx.Rows, error)         { return nil, r.err }
func (r errBatchResults) QueryRow() pgx.Row                { return errRow(r) }
func (r errBatchResults) Close() error                     { return r.err }
func (r errBatchResults) Tx() pgx.Tx                       { return nil }

// Send sends the statements queued on b in one round trip (none when b
// is empty), reading every result; driver errors come back translated
// (store.Translate).
func (t *Tx) Send(ctx context.Context, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if err := t.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write: %w", store.Translate(err))
	}
	return nil
}
