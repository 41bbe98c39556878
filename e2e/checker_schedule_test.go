package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// scheduleWorld is a schedule firing every second (skip) over five
// nominal times, as a correct cluster leaves it: runs at the first, the
// second, the fourth and the fifth, the third recorded skipped by the
// overlap policy, with the create and pause ops its client recorded;
// nominal time missing (-1: none) gets neither a run nor a fire.
type scheduleWorld struct {
	t     *testing.T
	ctx   context.Context
	conns [2]*pgx.Conn
	dsns  map[uint16]string
	t0    time.Time
	runs  map[int]string // nominal index -> run
	ops   []*Op
}

const schedID = "sch-1"

func newScheduleWorld(t *testing.T) *scheduleWorld { return newScheduleWorldWithout(t, -1) }

func newScheduleWorldWithout(t *testing.T, missing int) *scheduleWorld {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	w := &scheduleWorld{t: t, ctx: ctx, dsns: map[uint16]string{}, runs: map[int]string{},
		t0: time.Now().UTC().Truncate(time.Second).Add(-time.Minute)}
	for shard := range 2 {
		dsn, conn := plantDB(ctx, t)
		w.conns[shard], w.dsns[uint16(shard)] = conn, dsn
	}
	for i := range 5 {
		switch i {
		case missing:
			continue
		case 2:
			w.plantFire(i, 1, "skipped", "overlap (skip): run x is still running", "")
			continue
		}
		w.runs[i] = w.plantRun(0, i, 1)
		w.plantFire(i, 1, "started", "", w.runs[i])
	}
	w.ops = []*Op{
		{ID: 1, Kind: KindSchedule, Workflow: wfChild, Key: schedID, IntervalMS: 1000, Overlap: "skip", OK: true, Status: 201,
			Begin: w.t0.Add(-time.Second), End: w.t0.Add(-time.Second)},
		{ID: 2, Kind: KindSchedulePause, Workflow: wfChild, Key: schedID, OK: true, Status: 200,
			Begin: w.t0.Add(5 * time.Second), End: w.t0.Add(5 * time.Second)},
	}
	return w
}

// key is the fire key of nominal time i of generation gen.
func (w *scheduleWorld) key(i int, gen int64) string {
	return fmt.Sprintf("%s%s:%d:%s", schedKeyPrefix, schedID, gen, w.nominal(i).Format(schedNominal))
}

func (w *scheduleWorld) nominal(i int) time.Time { return w.t0.Add(time.Duration(i) * time.Second) }

// plantRun plants a completed run of nominal time i in shard.
func (w *scheduleWorld) plantRun(shard uint16, i int, gen int64) string {
	id := newExecID(shard)
	require.NoError(w.t, plantExecution(w.ctx, w.conns[shard], id, wfChild, schedID, w.key(i, gen), "COMPLETED"))
	return id
}

// plantFire records the fire of nominal time i in shard 0.
func (w *scheduleWorld) plantFire(i int, gen int64, outcome, reason, run string) {
	var exec any
	if run != "" {
		exec = run
	}
	_, err := w.conns[0].Exec(w.ctx, `
		INSERT INTO harvest_schedule_fires (fire_key, schedule_id, generation, nominal_at, outcome, reason, workflow_id, execution_id)
		VALUES ($1, $2, $3, $4, $5, $6, $2, $7)`, w.key(i, gen), schedID, gen, w.nominal(i), outcome, reason, exec)
	require.NoError(w.t, err)
}

// exec runs a statement on shard 0.
func (w *scheduleWorld) exec(sql string, args ...any) {
	_, err := w.conns[0].Exec(w.ctx, sql, args...)
	require.NoError(w.t, err)
}

// check runs the checker and counts the violations by check.
func (w *scheduleWorld) check() map[string]int {
	w.t.Helper()
	st, err := ReadDB(w.ctx, w.dsns)
	require.NoError(w.t, err)
	got := map[string]int{}
	for _, v := range Check(w.ops, st) {
		w.t.Logf("violation [%s] %s", v.Check, v.Detail)
		got[v.Check]++
	}
	return got
}

func TestCheckSchedules(t *testing.T) {
	t.Run("clean schedule", func(t *testing.T) {
		w := newScheduleWorld(t)
		require.Empty(t, w.check())
		st, err := ReadDB(w.ctx, w.dsns)
		require.NoError(t, err)
		require.Contains(t, ScheduleStats(w.ops, st), "4 scheduled runs, 1 fires recorded skipped")
	})
	t.Run("planted duplicate run of a fire key", func(t *testing.T) {
		w := newScheduleWorld(t)
		w.plantRun(1, 1, 1) // a second run of nominal time 1, in the other shard
		require.Equal(t, map[string]int{CheckScheduleOnce: 1}, w.check())
	})
	t.Run("a nominal time fired by two generations", func(t *testing.T) {
		w := newScheduleWorld(t)
		w.plantRun(0, 3, 2)
		require.Equal(t, map[string]int{CheckScheduleOnce: 1}, w.check())
	})
	t.Run("planted gap", func(t *testing.T) {
		require.Equal(t, map[string]int{CheckScheduleGap: 1}, newScheduleWorldWithout(t, 3).check())
	})
	t.Run("planted gap: an overlap skip not recorded", func(t *testing.T) {
		require.Equal(t, map[string]int{CheckScheduleGap: 1}, newScheduleWorldWithout(t, 2).check())
	})
	t.Run("a skip recorded as missed is a gap", func(t *testing.T) {
		w := newScheduleWorld(t)
		w.exec(`UPDATE harvest_schedule_fires SET reason = 'missed: 1 fire(s) from x, older than the catch-up window'
		         WHERE fire_key = $1`, w.key(2, 1))
		require.Equal(t, map[string]int{CheckScheduleGap: 1}, w.check())
	})
	t.Run("a fire still pending after the heal", func(t *testing.T) {
		w := newScheduleWorld(t)
		w.exec(`UPDATE harvest_schedule_fires SET outcome = 'pending', reason = '' WHERE fire_key = $1`, w.key(2, 1))
		require.Positive(t, w.check()[CheckScheduleGap])
	})
	t.Run("a started fire names another run", func(t *testing.T) {
		w := newScheduleWorld(t)
		w.exec(`UPDATE harvest_schedule_fires SET execution_id = $2 WHERE fire_key = $1`, w.key(0, 1), w.runs[1])
		require.Equal(t, map[string]int{CheckScheduleGap: 1}, w.check())
	})
	t.Run("a schedule that never fired", func(t *testing.T) {
		w := newScheduleWorld(t)
		w.ops = append(w.ops,
			&Op{ID: 3, Kind: KindSchedule, Workflow: wfChild, Key: "sch-2", IntervalMS: 1000, OK: true, Status: 201, End: w.t0},
			&Op{ID: 4, Kind: KindSchedulePause, Workflow: wfChild, Key: "sch-2", OK: true, Status: 200, Begin: w.t0.Add(time.Minute)})
		require.Equal(t, map[string]int{CheckScheduleGap: 1}, w.check())
	})
	t.Run("a run of a schedule nobody created", func(t *testing.T) {
		w := newScheduleWorld(t)
		stray := newExecID(0)
		require.NoError(t, plantExecution(w.ctx, w.conns[0], stray, wfChild, "sch-9", schedKeyPrefix+"sch-9:1:"+w.t0.Format(schedNominal), "COMPLETED"))
		require.Equal(t, map[string]int{CheckPhantom: 1}, w.check())
	})
	t.Run("create answered conflict, pause unanswered", func(t *testing.T) {
		w := newScheduleWorld(t)
		w.ops[0].OK, w.ops[0].Status, w.ops[0].Code = false, 409, codeConflict
		w.ops[1].OK, w.ops[1].Status, w.ops[1].Err = false, 0, "timeout"
		require.Equal(t, map[string]int{CheckAnswered: 1}, w.check())
	})
}

func TestParseFireKey(t *testing.T) {
	k, ok := parseFireKey("hv:sched:nightly:3:2026-11-01T05:30:00.000Z")
	require.True(t, ok)
	require.Equal(t, fireKey{"nightly", 3, time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)}, k)
	for _, bad := range []string{"sch-1", "hv:child:x:1", "hv:sched:x:y:2026-11-01T05:30:00.000Z", "hv:sched:x:1:noon"} {
		_, ok := parseFireKey(bad)
		require.False(t, ok, bad)
	}
}
