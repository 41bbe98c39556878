package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schedules (the workload's interval schedules, workload_schedule.go).
//
// A fire is a keyed start with the key
// hv:sched:<schedule id>:<generation>:<nominal time UTC>, and each fire is
// recorded in the schedule's shard (harvest_schedule_fires). Per schedule
// the workload created:
//   - at most one run per fire key, and per nominal time (across
//     generations), in any shard; no run of a schedule nobody created;
//   - every nominal time on its interval grid between the first and the
//     last one fired or recorded has a run or a fire recorded skipped by
//     the overlap policy ("overlap …") or an admission gate ("gated …"):
//     a missing one, a fire skipped as "missed" (the catch-up window must
//     cover every downtime of the suite), failed, or still pending after
//     the heal is a gap;
//   - a fire recorded started names a run of its key;
//   - a schedule whose create was answered and that lived a few intervals
//     fired at least once.
//
// Only the newest 100 fires of a schedule stay recorded: for a schedule
// with that many the grid is checked from its oldest recorded fire.

// Check names of the schedule part.
const (
	CheckScheduleOnce = "schedule nominal time -> at most one run"
	CheckScheduleGap  = "schedule nominal time -> a run or a recorded skip"
)

// System start key prefix of schedule fires, the nominal time's format in
// it (engine.ScheduleFireKey), and how many fires a schedule keeps
// recorded (the engine's keptFires).
const (
	schedKeyPrefix = "hv:sched:"
	schedNominal   = "2006-01-02T15:04:05.000Z"
	schedKeptFires = 100
)

// fireRow is one recorded fire.
type fireRow struct {
	shard                   uint16
	key, schedule           string
	generation              int64
	nominal                 time.Time
	outcome, reason, execID string
	triggered               bool
}

// fireKey is a fire key read back: its schedule, generation and nominal
// time.
type fireKey struct {
	schedule   string
	generation int64
	nominal    time.Time
}

// parseFireKey reads a fire key; false when ik is not one.
func parseFireKey(ik string) (fireKey, bool) {
	rest, ok := strings.CutPrefix(ik, schedKeyPrefix)
	if !ok {
		return fireKey{}, false
	}
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 {
		return fireKey{}, false
	}
	gen, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return fireKey{}, false
	}
	t, err := time.Parse(schedNominal, parts[2])
	if err != nil {
		return fireKey{}, false
	}
	return fireKey{parts[0], gen, t}, true
}

// readFires reads the shard's recorded fires into st.
func (st *DBState) readFires(ctx context.Context, shard uint16, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT fire_key, schedule_id, generation, nominal_at, outcome, reason, triggered, coalesce(execution_id::text, '')
		  FROM harvest_schedule_fires`)
	if err != nil {
		return err
	}
	for rows.Next() {
		f := &fireRow{shard: shard}
		if err := rows.Scan(&f.key, &f.schedule, &f.generation, &f.nominal, &f.outcome, &f.reason, &f.triggered, &f.execID); err != nil {
			return err
		}
		st.fires = append(st.fires, f)
	}
	return rows.Err()
}

// schedulePlan is one schedule the workload created, as the checker sees
// it.
type schedulePlan struct {
	create   *Op // its first create op
	interval time.Duration
	answered bool
	life     time.Duration        // from the create's answer to the first pause sent after it; 0 if unknown
	runs     map[int64][]*execRow // nominal (unix ms) -> runs
	fires    map[int64][]*fireRow // nominal (unix ms) -> recorded fires (not triggered)
}

// schedulePlans groups the schedule ops by schedule id.
func schedulePlans(ops []*Op) map[string]*schedulePlan {
	plans := map[string]*schedulePlan{}
	var answeredAt = map[string]time.Time{}
	for _, op := range sortedOps(ops) {
		p := plans[op.Key]
		switch {
		case op.Kind == KindSchedule && p == nil:
			p = &schedulePlan{create: op, interval: time.Duration(op.IntervalMS) * time.Millisecond,
				runs: map[int64][]*execRow{}, fires: map[int64][]*fireRow{}}
			plans[op.Key] = p
			fallthrough
		case op.Kind == KindSchedule:
			if op.Answered() && !p.answered {
				p.answered, answeredAt[op.Key] = true, op.End
			}
		case op.Kind == KindSchedulePause && p != nil && p.answered && p.life == 0:
			p.life = op.Begin.Sub(answeredAt[op.Key])
		}
	}
	return plans
}

// checkSchedules checks the schedules' runs and recorded fires.
func checkSchedules(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	plans := schedulePlans(ops)
	fillSchedules(plans, st, add)
	for _, id := range sortedKeys(plans) {
		checkSchedule(id, plans[id], st, add)
	}
}

// fillSchedules files the scheduled runs and the recorded fires under
// their schedules, checking the runs per fire key.
func fillSchedules(plans map[string]*schedulePlan, st *DBState, add func(check, format string, args ...any)) {
	byKey := map[string][]string{}
	for _, id := range sortedKeys(st.execs) {
		x := st.execs[id]
		k, ok := parseFireKey(x.ik)
		if !ok {
			continue
		}
		byKey[x.ik] = append(byKey[x.ik], x.id)
		p := plans[k.schedule]
		if p == nil {
			add(CheckPhantom, "execution %s has the fire key %q of a schedule no client created", x.id, x.ik)
			continue
		}
		p.runs[k.nominal.UnixMilli()] = append(p.runs[k.nominal.UnixMilli()], x)
	}
	for _, k := range sortedKeys(byKey) {
		if ids := byKey[k]; len(ids) > 1 {
			add(CheckScheduleOnce, "fire key %q has %d runs: %s", k, len(ids), strings.Join(ids, ", "))
		}
	}
	for _, f := range st.fires {
		if p := plans[f.schedule]; p != nil && !f.triggered {
			p.fires[f.nominal.UnixMilli()] = append(p.fires[f.nominal.UnixMilli()], f)
		}
	}
}

// checkSchedule checks one schedule's nominal times.
func checkSchedule(id string, p *schedulePlan, st *DBState, add func(check, format string, args ...any)) {
	for _, ms := range sortedMillis(p.runs) {
		if rs := p.runs[ms]; len(rs) > 1 && rs[0].ik != rs[1].ik {
			add(CheckScheduleOnce, "schedule %s nominal time %s has %d runs (keys %q, %q)", id, fmtMillis(ms), len(rs), rs[0].ik, rs[1].ik)
		}
	}
	for _, ms := range sortedMillis(p.fires) {
		for _, f := range p.fires[ms] {
			checkFire(f, st, add)
		}
	}
	first, last, ok := p.span()
	if !ok {
		if p.answered && p.life > 4*p.interval {
			add(CheckScheduleGap, "schedule %s (every %s, created and paused %s later) never fired", id, p.interval, p.life.Round(time.Second))
		}
		return
	}
	step := p.interval.Milliseconds()
	if step <= 0 {
		return
	}
	for ms := first; ms <= last; ms += step {
		if ms%step != 0 {
			add(CheckScheduleGap, "schedule %s (every %s) fired at %s, off its grid", id, p.interval, fmtMillis(ms))
			return
		}
		if len(p.runs[ms]) == 0 && !p.skipped(ms) {
			add(CheckScheduleGap, "schedule %s (every %s): nominal time %s has no run and no recorded skip%s", id, p.interval,
				fmtMillis(ms), p.fireNote(ms))
		}
	}
}

// checkFire checks one recorded fire: started names a run of its key,
// none is failed or still pending.
func checkFire(f *fireRow, st *DBState, add func(check, format string, args ...any)) {
	switch f.outcome {
	case "started":
		if x := st.execs[f.execID]; x == nil || x.ik != f.key {
			add(CheckScheduleGap, "fire %q is recorded started with run %q, which is not a run of its key", f.key, f.execID)
		}
	case "pending", "failed":
		add(CheckScheduleGap, "fire %q is %s after the heal: %s", f.key, f.outcome, f.reason)
	}
}

// span is the first and last nominal time fired or recorded (the first
// recorded only, when older fires may have been pruned).
func (p *schedulePlan) span() (first, last int64, ok bool) {
	recorded := 0
	for ms, fs := range p.fires {
		recorded += len(fs)
		first, last, ok = extend(first, last, ok, ms)
	}
	pruned := recorded >= schedKeptFires
	for ms := range p.runs {
		if pruned && ms < first {
			continue
		}
		first, last, ok = extend(first, last, ok, ms)
	}
	return first, last, ok
}

func extend(first, last int64, ok bool, ms int64) (int64, int64, bool) {
	if !ok {
		return ms, ms, true
	}
	return min(first, ms), max(last, ms), true
}

// skipped reports whether the fire at ms is recorded skipped by the
// overlap policy or a gate.
func (p *schedulePlan) skipped(ms int64) bool {
	for _, f := range p.fires[ms] {
		if f.outcome == "skipped" && (strings.HasPrefix(f.reason, "overlap") || strings.HasPrefix(f.reason, "gated")) {
			return true
		}
	}
	return false
}

// fireNote says what is recorded of the fire at ms, for a violation.
func (p *schedulePlan) fireNote(ms int64) string {
	var notes []string
	for _, f := range p.fires[ms] {
		notes = append(notes, fmt.Sprintf("%s %q", f.outcome, f.reason))
	}
	if len(notes) == 0 {
		return " (nothing recorded)"
	}
	return " (recorded " + strings.Join(notes, ", ") + ")"
}

func sortedMillis[V any](m map[int64]V) []int64 {
	s := make([]int64, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

func fmtMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format(schedNominal) }

// ScheduleStats summarizes the schedules for the report's notes.
func ScheduleStats(ops []*Op, st *DBState) string {
	plans := schedulePlans(ops)
	runs, skipped, other := 0, 0, 0
	var spans []string
	for _, x := range st.execs {
		if _, ok := parseFireKey(x.ik); ok {
			runs++
		}
	}
	for _, f := range st.fires {
		switch {
		case plans[f.schedule] == nil || f.triggered:
		case f.outcome == "skipped":
			skipped++
		case f.outcome != "started":
			other++
		}
	}
	fillSchedules(plans, st, func(string, string, ...any) {})
	for _, id := range sortedKeys(plans) {
		p := plans[id]
		first, last, ok := p.span()
		n := int64(0)
		if ok && p.interval > 0 {
			n = (last-first)/p.interval.Milliseconds() + 1
		}
		spans = append(spans, fmt.Sprintf("%s %s/%s %d", id, p.interval, p.create.Overlap, n))
	}
	return fmt.Sprintf("schedules: %d created (id interval/overlap nominal times: %s); %d scheduled runs, %d fires recorded skipped, "+
		"%d failed or pending", len(plans), strings.Join(spans, ", "), runs, skipped, other)
}
