package membership

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMetaEncoding(t *testing.T) {
	t.Parallel()
	meta := Meta{NodeID: "n1", APIAddr: "10.0.0.1:7233", RaftAddr: "10.0.0.1:7234", Version: "1.2.3"}
	for _, leaving := range []bool{false, true} {
		b, err := encodeMeta(meta, leaving, nil)
		require.NoError(t, err)
		got, gotLeaving := decodeMeta("n1", b)
		require.Equal(t, meta, got)
		require.Equal(t, leaving, gotLeaving)
	}

	b, err := encodeMeta(Meta{NodeID: "n1"}, false, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"n1"}`, string(b))

	got, leaving := decodeMeta("n9", []byte("garbage"))
	require.Equal(t, Meta{NodeID: "n9"}, got, "undecodable metadata keeps the memberlist name")
	require.False(t, leaving)
	got, _ = decodeMeta("n9", []byte(`{"id":"impostor","api":"a:1","future":42}`))
	require.Equal(t, Meta{NodeID: "n9", APIAddr: "a:1"}, got, "the memberlist name wins; unknown keys are ignored")
}

func TestTable(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	member := func(id string, s State) Member {
		return Member{Meta: Meta{NodeID: id}, GossipAddr: id + ":7946", State: s}
	}
	newTableWith := func(ms ...Member) *table {
		tb := newTable()
		for _, m := range ms {
			tb.set(m, t0)
		}
		return tb
	}

	t.Run("LeftIfDead", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name    string
			members []Member
			changed bool
			want    State
		}{
			{name: "DeadBecomesLeft", members: []Member{member("b", StateDead)}, changed: true, want: StateLeft},
			{name: "AliveStaysAlive", members: []Member{member("b", StateAlive)}, want: StateAlive},
			{name: "LeftStaysLeft", members: []Member{member("b", StateLeft)}, want: StateLeft},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				tb := newTableWith(tc.members...)
				left := member("b", StateLeft)
				left.APIAddr = "api.b:7233"
				require.Equal(t, tc.changed, tb.leftIfDead(left, t0.Add(time.Minute)))
				got, ok := tb.get("b")
				require.True(t, ok)
				require.Equal(t, tc.want, got.State)
				if tc.changed {
					require.Equal(t, "api.b:7233", got.APIAddr, "the peer's view of the member is taken")
				}
			})
		}
		empty := newTable()
		require.False(t, empty.leftIfDead(member("x", StateLeft), t0), "an unknown member is not added")
		_, ok := empty.get("x")
		require.False(t, ok)
	})

	t.Run("RejoinTargets", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name    string
			members []Member
			seeds   []string
			want    []string
		}{
			{name: "AllAlive", members: []Member{member("a", StateAlive), member("b", StateAlive)}, seeds: []string{"b:7946"}},
			{name: "LeftIsNotRejoined", members: []Member{member("a", StateAlive), member("b", StateLeft)}},
			{
				name:    "DeadAndSeeds",
				members: []Member{member("a", StateAlive), member("c", StateDead), member("b", StateDead)},
				seeds:   []string{"s:7946", "b:7946", "a:7946"},
				want:    []string{"s:7946", "b:7946", "c:7946"},
			},
			{
				name:    "FewerAliveThanSeeds",
				members: []Member{member("a", StateAlive)},
				seeds:   []string{"s1:7946", "s2:7946"},
				want:    []string{"s1:7946", "s2:7946"},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				got := newTableWith(tt.members...).rejoinTargets("a:7946", tt.seeds)
				require.Equal(t, tt.want, got)
			})
		}
	})

	t.Run("Reap", func(t *testing.T) {
		t.Parallel()
		tb := newTableWith(member("a", StateDead), member("b", StateDead), member("c", StateLeft), member("d", StateAlive))
		tb.set(member("b", StateDead), t0.Add(time.Hour)) // same state: keeps its time
		tb.set(member("c", StateLeft), t0.Add(time.Hour))
		tb.set(member("d", StateAlive), t0.Add(2*time.Hour))

		gone := tb.reap("a", t0.Add(time.Minute))
		require.ElementsMatch(t, []string{"b", "c"}, memberIDs(gone), "self and alive members stay")
		require.Equal(t, []string{"a", "d"}, memberIDs(tb.list(func(Member) bool { return true })))
	})

	t.Run("StateChangeResetsTime", func(t *testing.T) {
		t.Parallel()
		tb := newTableWith(member("b", StateDead))
		tb.set(member("b", StateAlive), t0.Add(time.Hour))
		tb.set(member("b", StateDead), t0.Add(2*time.Hour))
		require.Empty(t, tb.reap("a", t0.Add(90*time.Minute)))
	})
}

func TestStateString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "alive", StateAlive.String())
	require.Equal(t, "dead", StateDead.String())
	require.Equal(t, "left", StateLeft.String())
	require.Equal(t, "unknown", State(0).String())
}
