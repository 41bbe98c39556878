package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The recorder behind TestStatementCounts: a pgx tracer on the engine's
// pool that groups what the engine sends into round trips and units.
//
// A round trip is one Query, QueryRow or Exec outside a batch, or one
// SendBatch with every statement queued on it. The prepares pgx sends on
// a connection's first use of a statement are not counted (nor traced:
// pgx's PrepareTracer sees only explicit Prepare calls, and the engine
// makes none): they depend on which pooled connection serves a call, not
// on the engine. A unit is a
// transaction (its round trips from BEGIN to the COMMIT or ROLLBACK that
// ran) or a round trip outside one. Units are kept in the order they
// finished.

// notRun is the outcome of a statement that was sent but not executed:
// one queued behind a failed statement of its batch.
const notRun = "not run"

// shownSQL is how much of a statement's text the golden file shows; a
// longer one is cut there and pinned whole by a hash of its text.
const shownSQL = 100

// stmt is one statement sent and what became of it.
type stmt struct {
	sql  string // the text, whitespace collapsed
	show string // the text as the golden file shows it
	// out is the command tag ("SELECT 1", "INSERT 2", "BEGIN"),
	// "ERROR <SQLSTATE>", or notRun.
	out string
}

func newStmt(sql string) stmt {
	sql = strings.Join(strings.Fields(sql), " ")
	return stmt{sql: sql, show: showSQL(sql), out: notRun}
}

// showSQL cuts long statement texts and adds a hash of the whole text, so
// that the golden file stays readable and still pins every byte (but
// whitespace, which PostgreSQL ignores).
func showSQL(sql string) string {
	if len(sql) <= shownSQL {
		return sql
	}
	sum := sha256.Sum256([]byte(sql))
	return sql[:shownSQL] + "… #" + hex.EncodeToString(sum[:4])
}

// outcome is a statement's result as a stmt.out.
func outcome(tag pgconn.CommandTag, err error) string {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return "ERROR " + pgErr.Code
	case err != nil:
		return "ERROR " + err.Error()
	}
	s := tag.String()
	if rest, ok := strings.CutPrefix(s, "INSERT 0 "); ok { // the oid PostgreSQL no longer sets
		s = "INSERT " + rest
	}
	return s
}

// rows is how many rows the statement returned or changed (0 when its
// outcome has no count: BEGIN, SET, an error).
func (s stmt) rows() int64 {
	i := strings.LastIndexByte(s.out, ' ')
	n, err := strconv.ParseInt(s.out[i+1:], 10, 64)
	if err != nil || strings.HasPrefix(s.out, "ERROR") {
		return 0
	}
	return n
}

func (s stmt) failed() bool { return strings.HasPrefix(s.out, "ERROR") }

// roundTrip is one trip to the server.
type roundTrip struct {
	stmts []stmt
	next  int // the batch statements whose results were read
	// observer: the test's own read (observe), left out.
	observer bool
}

// begins says the round trip opens a transaction.
func (rt *roundTrip) begins() bool {
	return len(rt.stmts) > 0 && strings.HasPrefix(strings.ToUpper(rt.stmts[0].sql), "BEGIN")
}

// ends says a COMMIT or ROLLBACK of the round trip ran.
func (rt *roundTrip) ends() bool {
	return slices.ContainsFunc(rt.stmts, func(s stmt) bool {
		return (strings.EqualFold(s.sql, "COMMIT") || strings.EqualFold(s.sql, "ROLLBACK")) && s.out != notRun
	})
}

// unit is a transaction, or one round trip outside a transaction.
type unit struct {
	tx  bool
	rts []*roundTrip
}

func (u *unit) stmts() []stmt {
	var out []stmt
	for _, rt := range u.rts {
		out = append(out, rt.stmts...)
	}
	return out
}

// rolledBack says the unit is a transaction that ended in a ROLLBACK.
func (u *unit) rolledBack() bool {
	last := u.rts[len(u.rts)-1].stmts
	return u.tx && strings.EqualFold(last[len(last)-1].sql, "ROLLBACK")
}

// recorder is a pgx QueryTracer and BatchTracer that records units.
type recorder struct {
	mu   sync.Mutex
	open map[*pgx.Conn]*unit // the transaction in progress on each connection
	done []*unit             // finished units, in the order they finished
	// inFlight counts the round trips begun and not yet finished.
	inFlight int
}

var (
	_ pgx.QueryTracer = (*recorder)(nil)
	_ pgx.BatchTracer = (*recorder)(nil)
)

func newRecorder() *recorder { return &recorder{open: map[*pgx.Conn]*unit{}} }

type (
	roundTripKey struct{}
	observerKey  struct{}
)

// observe marks ctx as the test's own: what the engine reads with it (a
// wait for a run's state) is not recorded.
func observe(ctx context.Context) context.Context { return context.WithValue(ctx, observerKey{}, true) }

func (r *recorder) startRoundTrip(ctx context.Context, sqls ...string) context.Context {
	rt := &roundTrip{observer: ctx.Value(observerKey{}) != nil}
	if !rt.observer {
		r.mu.Lock()
		r.inFlight++
		r.mu.Unlock()
	}
	for _, sql := range sqls {
		rt.stmts = append(rt.stmts, newStmt(sql))
	}
	return context.WithValue(ctx, roundTripKey{}, rt)
}

func roundTripOf(ctx context.Context) *roundTrip { return ctx.Value(roundTripKey{}).(*roundTrip) }

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return r.startRoundTrip(ctx, d.SQL)
}

func (r *recorder) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryEndData) {
	rt := roundTripOf(ctx)
	rt.stmts[0].out = outcome(d.CommandTag, d.Err)
	r.finish(conn, rt)
}

// TraceBatchStart takes the statements from the batch itself, so that
// those a failed statement kept from running are recorded too.
func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	sqls := make([]string, len(d.Batch.QueuedQueries))
	for i, q := range d.Batch.QueuedQueries {
		sqls[i] = q.SQL
	}
	return r.startRoundTrip(ctx, sqls...)
}

// TraceBatchQuery is called for the batch's statements in order, as their
// results are read.
func (r *recorder) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	rt := roundTripOf(ctx)
	if rt.next < len(rt.stmts) {
		rt.stmts[rt.next].out = outcome(d.CommandTag, d.Err)
		rt.next++
	}
}

func (r *recorder) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchEndData) {
	r.finish(conn, roundTripOf(ctx))
}

// finish adds a round trip to its connection's transaction, or makes it
// a unit of its own.
func (r *recorder) finish(conn *pgx.Conn, rt *roundTrip) {
	if rt.observer {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	u := r.open[conn]
	if u == nil {
		u = &unit{tx: rt.begins()}
	}
	u.rts = append(u.rts, rt)
	if u.tx && !rt.ends() {
		r.open[conn] = u
		return
	}
	delete(r.open, conn)
	r.done = append(r.done, u)
}

// quiet says no round trip is on its way and no transaction open. A
// transaction's effects are visible to other sessions as soon as the server
// commits it, a moment before its own round trip returns: a window that
// ends on such an effect waits for quiet before it takes its units.
func (r *recorder) quiet() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight == 0 && len(r.open) == 0
}

// mark is where a window of units begins.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done)
}

// since returns the units finished since mark, less the background's.
func (r *recorder) since(mark int) []*unit {
	r.mu.Lock()
	units := slices.Clone(r.done[mark:])
	r.mu.Unlock()
	return slices.DeleteFunc(units, background)
}

// The engine's loops run beside the operations. Config quiets them (no
// poll tick, lease renewal or sweep within the test), but each polls once
// when it starts and again whenever it is nudged, and the analyze loop
// ticks every 2 s whatever the config. A unit is the background's, and
// left out, when all it sends is bookkeeping and these statements, and
// its polls found nothing: an empty poll may fall inside or outside a
// window, as the scheduler pleases. A poll that finds work (the workflow
// loop claiming the task a signal woke) is kept.
var (
	// bookkeeping neither finds nor changes work: transaction control and
	// the fence every fenced transaction begins with.
	bookkeeping = []string{"BEGIN", "COMMIT", "ROLLBACK", "SELECT pg_advisory_xact_lock_shared($1)",
		"SELECT epoch, owner_node FROM harvest_shard_lease", "SET LOCAL enable_seqscan = off"}
	// polls look for work to claim: workflow tasks, activity tasks,
	// timers, completion callbacks, schedules.
	polls = []string{
		"FROM harvest_executions WHERE wf_task_due_at <=",
		"UPDATE harvest_tasks t SET status = 'running'",
		"SELECT execution_id, timer_id FROM harvest_timers WHERE fire_at <=",
		"FROM harvest_callbacks WHERE status = 'due'",
		"SELECT schedule_id FROM harvest_schedules WHERE",
	}
	// looks are the background's whatever they return: the outbox's and
	// the deferred starts' looks before a claim, the next due times the
	// loops arm their timers with, the analyze loop's check and ANALYZE,
	// a lease renewal.
	looks = []string{
		"SELECT EXISTS (SELECT 1 FROM harvest_outbox",
		"SELECT EXISTS (SELECT 1 FROM harvest_deferred",
		"SELECT min(next_at) FROM harvest_schedules",
		"SELECT min(fire_at) FROM harvest_deferred",
		"SELECT extract(epoch FROM min(fire_at) - now()",
		"JOIN pg_stat_user_tables",
		"SELECT set_config('default_statistics_target'",
		"ANALYZE ",
		"UPDATE harvest_shard_lease SET expires_at",
	}
	// clockSample is the engine's sample of the database's clock when sent
	// alone (a start batch in two trips reads now() too, with its claims).
	clockSample = "SELECT now()"
)

func background(u *unit) bool {
	if ss := u.stmts(); len(ss) == 1 && ss[0].sql == clockSample {
		return true
	}
	seen := false
	for _, s := range u.stmts() {
		switch {
		case slices.ContainsFunc(bookkeeping, func(b string) bool { return strings.EqualFold(s.sql, b) }):
		case contains(looks, s.sql) && !s.failed():
			seen = true
		case contains(polls, s.sql) && !s.failed() && s.rows() == 0:
			seen = true
		default:
			return false
		}
	}
	return seen
}

func contains(fragments []string, sql string) bool {
	return slices.ContainsFunc(fragments, func(f string) bool { return strings.Contains(sql, f) })
}
