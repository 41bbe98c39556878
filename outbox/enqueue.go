package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: the application's pgx.Tx (or a pool or a
// connection, for a row that needs no transaction of its own).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Sentinel errors.
var (
	// ErrEmptyKey: a row needs an idempotency key (its delivery's).
	ErrEmptyKey = errors.New("outbox: empty idempotency key")
	// ErrEmptyName: a start needs a workflow name, a signal an execution
	// id and a signal name.
	ErrEmptyName = errors.New("outbox: empty workflow name, execution id or signal name")
)

// StartOptions are a start row's optional fields.
type StartOptions struct {
	// WorkflowID is the run's business id (empty: Harvest mints one).
	WorkflowID string
}

// Start writes, with db's transaction, the keyed start of workflow under
// key with input (JSON-encoded). It reports whether the row is new: a
// row of the same workflow and key is there already (a retried
// transaction), and nothing is written.
func Start(ctx context.Context, db Execer, workflow, key string, input any, opts ...StartOptions) (bool, error) {
	if workflow == "" {
		return false, ErrEmptyName
	}
	var o StartOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return insert(ctx, db, row{kind: kindStart, workflow: workflow, key: key, workflowID: o.WorkflowID}, input)
}

// Signal writes, with db's transaction, the keyed signal of run
// executionID named signal with payload (JSON-encoded); it reports
// whether the row is new, as Start does.
func Signal(ctx context.Context, db Execer, executionID, signal, key string, payload any) (bool, error) {
	if executionID == "" || signal == "" {
		return false, ErrEmptyName
	}
	return insert(ctx, db, row{kind: kindSignal, executionID: executionID, signal: signal, key: key}, payload)
}

// The kinds of rows.
const (
	kindStart  = "start"
	kindSignal = "signal"
)

// row is one outbox row.
type row struct {
	id                               int64
	kind, workflow, executionID, key string
	workflowID, signal               string
	payload                          json.RawMessage
	attempts                         int
}

// insert writes r with v as its payload.
func insert(ctx context.Context, db Execer, r row, v any) (bool, error) {
	if r.key == "" {
		return false, ErrEmptyKey
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return false, fmt.Errorf("outbox: encode the payload: %w", err)
	}
	tag, err := db.Exec(ctx, `
		INSERT INTO harvest_app_outbox (kind, workflow_name, execution_id, idempotency_key, workflow_id, signal_name, payload)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (kind, workflow_name, execution_id, idempotency_key) DO NOTHING`,
		r.kind, r.workflow, r.executionID, r.key, r.workflowID, r.signal, payload)
	if err != nil {
		return false, fmt.Errorf("outbox: write the row: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
