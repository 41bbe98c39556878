package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMostAtOnce(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	slot := func(from, to int) *slotRow {
		r := &slotRow{since: at(from)}
		if to >= 0 {
			r.till = at(to)
		}
		return r
	}
	for _, c := range []struct {
		name string
		rows []*slotRow
		want int
	}{
		{"None", nil, 0},
		{"InTurn", []*slotRow{slot(0, 10), slot(10, 20), slot(20, 30)}, 1},
		{"Overlapping", []*slotRow{slot(0, 10), slot(5, 15), slot(9, 20)}, 3},
		{"StillHeld", []*slotRow{slot(0, -1), slot(5, -1), slot(100, 200)}, 3},
		{"ClosedAsTaken", []*slotRow{slot(0, 10), slot(5, 5), slot(7, 3)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := mostAtOnce(c.rows)
			require.Equal(t, c.want, got)
		})
	}
}

func TestCheckFlow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	three := func(shard uint16, key string) []*slotRow {
		var out []*slotRow
		for i := range 3 {
			out = append(out, &slotRow{shard: shard, name: wfReport, key: key, since: t0.Add(time.Duration(i) * time.Millisecond),
				till: t0.Add(time.Second)})
		}
		return out
	}
	var got []string
	add := func(check, format string, args ...any) { got = append(got, check) }
	checkFlow(&DBState{slots: append(three(0, "a")[:2], three(1, "a")[:2]...)}, add)
	require.Empty(t, got, "two per shard: within the limit of each")
	checkFlow(&DBState{slots: three(0, "a")}, add)
	require.Equal(t, []string{CheckFlowLimit}, got)
}

func TestCheckActivityFlow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	report := func(id string) *slotRow {
		return &slotRow{shard: 0, id: id, name: wfReport, key: "c", since: at(0), till: at(100)}
	}
	render := func(id string, from, to int) *slotRow {
		return &slotRow{shard: 0, id: id, name: activityRender, key: "c", since: at(from), till: at(to)}
	}
	completed := map[string]*execRow{"r1": {state: "COMPLETED"}, "r2": {state: "COMPLETED"}}
	for _, c := range []struct {
		name    string
		renders []*slotRow
		want    []string
	}{
		{"InTurn", []*slotRow{render("r1", 10, 20), render("r2", 20, 30)}, nil},
		{"Overlapping", []*slotRow{render("r1", 10, 20), render("r2", 15, 30)}, []string{CheckActivityFlowLimit}},
		{"NoSlotRecorded", []*slotRow{render("r1", 10, 20)}, []string{CheckActivityFlowLimit}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			add := func(check, format string, args ...any) { got = append(got, check) }
			checkFlow(&DBState{execs: completed, slots: []*slotRow{report("r1"), report("r2")}, activitySlots: c.renders}, add)
			require.Equal(t, c.want, got)
		})
	}
}

func TestCheckClusterFlow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	export := func(shard uint16, ms int) *slotRow {
		return &slotRow{shard: shard, name: wfExport, key: "t", since: t0.Add(time.Duration(ms) * time.Millisecond), till: t0.Add(time.Second)}
	}
	keeper := func(id, state string) *execRow {
		return &execRow{id: id, name: wfKeeper, wfID: "hv:flow:export/t", state: state}
	}
	for _, c := range []struct {
		name  string
		slots []*slotRow
		execs map[string]*execRow
		want  []string
	}{
		{"TwoOnTwoShards", []*slotRow{export(0, 0), export(1, 1)}, map[string]*execRow{"k": keeper("k", "RUNNING")}, nil},
		{"ThreeOnThreeShards", []*slotRow{export(0, 0), export(1, 1), export(2, 2)}, nil, []string{CheckClusterFlowLimit}},
		{"AKeeperClosed", nil, map[string]*execRow{"k": keeper("k", "TERMINATED")}, []string{CheckClusterFlowLimit}},
		{"TwoKeepersRunning", nil, map[string]*execRow{"k1": keeper("k1", "RUNNING"), "k2": keeper("k2", "RUNNING")},
			[]string{CheckClusterFlowLimit}},
		{"AKeeperContinued", nil, map[string]*execRow{"k1": keeper("k1", "CONTINUED_AS_NEW"), "k2": keeper("k2", "RUNNING")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			add := func(check, format string, args ...any) { got = append(got, check) }
			checkFlow(&DBState{slots: c.slots, execs: c.execs}, add)
			require.Equal(t, c.want, got)
		})
	}
}
