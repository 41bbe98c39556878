package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/ring"
)

// t0 is the base time of the pure tests.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func epoch(n uint64, since time.Time, readable, writable []uint16) Epoch {
	return Epoch{Number: n, Since: since, Readable: readable, Writable: writable}
}

func TestCatalogWithinWindow(t *testing.T) {
	t.Parallel()

	a := epoch(1, t0, []uint16{0, 1}, []uint16{0, 1})
	b := epoch(2, t0.Add(time.Hour), []uint16{0, 1, 2}, []uint16{0, 1, 2})
	c := epoch(3, t0.Add(2*time.Hour), []uint16{0, 1, 2}, []uint16{0, 2})
	backToA := epoch(3, t0.Add(2*time.Hour), []uint16{0, 1}, []uint16{0, 1})
	hour := Settings{IdempotencyWindow: time.Hour}

	tests := []struct {
		name string
		cat  Catalog
		now  time.Time
		want []ring.Catalog
	}{
		{name: "Empty", cat: Catalog{}, now: t0, want: nil},
		{name: "OnlyCurrentEvenWhenOld", cat: Catalog{Epochs: []Epoch{a}, Settings: hour},
			now: t0.Add(48 * time.Hour), want: []ring.Catalog{a.Placement()}},
		{name: "CurrentAndPrevious", cat: Catalog{Epochs: []Epoch{a, b, c}, Settings: hour},
			now: t0.Add(150 * time.Minute), want: []ring.Catalog{c.Placement(), b.Placement()}},
		{name: "PreviousEndedExactlyAtWindowStart", cat: Catalog{Epochs: []Epoch{a, b, c}, Settings: hour},
			now: t0.Add(3 * time.Hour), want: []ring.Catalog{c.Placement(), b.Placement()}},
		{name: "PreviousEndedBeforeWindow", cat: Catalog{Epochs: []Epoch{a, b, c}, Settings: hour},
			now: t0.Add(190 * time.Minute), want: []ring.Catalog{c.Placement()}},
		{name: "AllInsideNewestFirst", cat: Catalog{Epochs: []Epoch{a, b, c}, Settings: hour},
			now: t0.Add(90 * time.Minute), want: []ring.Catalog{c.Placement(), b.Placement(), a.Placement()}},
		{name: "DistinctPlacementsOnly", cat: Catalog{Epochs: []Epoch{a, b, backToA}, Settings: hour},
			now: t0.Add(90 * time.Minute), want: []ring.Catalog{a.Placement(), b.Placement()}},
		{name: "ZeroWindowMeansDefault", cat: Catalog{Epochs: []Epoch{a, b, c}},
			now: t0.Add(20 * time.Hour), want: []ring.Catalog{c.Placement(), b.Placement(), a.Placement()}},
		{name: "DefaultWindowPassed", cat: Catalog{Epochs: []Epoch{a, b, c}},
			now: t0.Add(26*time.Hour + time.Minute), want: []ring.Catalog{c.Placement()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.cat.WithinWindow(tt.now)
			require.Equal(t, tt.want, got, "WithinWindow(%s)", tt.now)
		})
	}
}

func TestCatalogCurrent(t *testing.T) {
	t.Parallel()

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, ring.Catalog{}, Catalog{}.Current())
		_, ok := Catalog{}.CurrentEpoch()
		require.False(t, ok)
		require.True(t, Catalog{}.Empty())
	})

	t.Run("LastEpoch", func(t *testing.T) {
		t.Parallel()
		cat := Catalog{Epochs: []Epoch{
			epoch(1, t0, []uint16{0}, []uint16{0}),
			epoch(2, t0.Add(time.Minute), []uint16{0, 1}, []uint16{1}),
		}}
		require.Equal(t, ring.Catalog{Readable: []uint16{0, 1}, Writable: []uint16{1}}, cat.Current())
		require.NoError(t, cat.Current().Validate())
		require.False(t, cat.Empty())
	})
}

func TestCatalogClone(t *testing.T) {
	t.Parallel()

	orig := Catalog{
		Shards:   map[uint16]Shard{1: {ID: 1, DSN: "dsn1", State: StateWritable}},
		Epochs:   []Epoch{epoch(1, t0, []uint16{1}, []uint16{1})},
		Settings: Settings{IdempotencyWindow: time.Hour},
		Index:    7,
	}
	clone := orig.Clone()
	require.Equal(t, orig, clone)

	clone.Shards[2] = Shard{ID: 2}
	clone.Epochs[0].Readable[0] = 9
	clone.Epochs = append(clone.Epochs, Epoch{Number: 2})
	require.Len(t, orig.Shards, 1, "shards shared with the clone")
	require.Equal(t, []uint16{1}, orig.Epochs[0].Readable, "epoch sets shared with the clone")
	require.Len(t, orig.Epochs, 1)

	require.Equal(t, Catalog{}, Catalog{}.Clone())
}

func TestShardStateTransitions(t *testing.T) {
	t.Parallel()

	states := []ShardState{StateReadable, StateWritable, StateDraining, StateReadOnly, "bogus"}
	allowed := map[[2]ShardState]bool{
		{StateReadable, StateWritable}: true,
		{StateWritable, StateDraining}: true,
		{StateDraining, StateWritable}: true,
		{StateDraining, StateReadOnly}: true,
		{StateReadOnly, StateWritable}: true,
	}
	for _, from := range states {
		for _, to := range states {
			t.Run(string(from)+"To"+string(to), func(t *testing.T) {
				t.Parallel()
				require.Equal(t, allowed[[2]ShardState{from, to}], from.CanBecome(to))
			})
		}
	}
	require.False(t, ShardState("bogus").Valid())
	require.True(t, StateReadOnly.Valid())
}
