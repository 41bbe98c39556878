package ring

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func shards(n int) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = uint16(i)
	}
	return out
}

func TestPickShard(t *testing.T) {
	t.Parallel()
	all := shards(8)
	for _, tc := range []struct {
		name    string
		cat     Catalog
		wantErr error
		check   func(t *testing.T, got uint16)
	}{
		{name: "AllWritable", cat: Catalog{Readable: all, Writable: all}},
		{name: "OneShard", cat: Catalog{Readable: []uint16{5}, Writable: []uint16{5}},
			check: func(t *testing.T, got uint16) { require.Equal(t, uint16(5), got) }},
		{name: "NoneWritable", cat: Catalog{Readable: all}, wantErr: ErrNoWritableShard},
		{name: "Empty", cat: Catalog{}, wantErr: ErrNoWritableShard},
		{name: "OnlyWritableChosen", cat: Catalog{Readable: all, Writable: []uint16{2, 6}},
			check: func(t *testing.T, got uint16) { require.Contains(t, []uint16{2, 6}, got) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.cat.Validate())
			for i := range 200 {
				got, err := PickShard(tc.cat, "order", fmt.Sprint("k", i))
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
					continue
				}
				require.NoError(t, err)
				if tc.check != nil {
					tc.check(t, got)
				}
			}
		})
	}
}

// A drain changes the writable set only: keys whose readable winner stays
// writable keep their shard.
func TestPickShardStableUnderDrain(t *testing.T) {
	t.Parallel()
	all := shards(8)
	before := Catalog{Readable: all, Writable: all}
	after := Catalog{Readable: all, Writable: []uint16{0, 1, 2, 4, 5, 6, 7}} // shard 3 drained
	moved := 0
	for i := range 10000 {
		k := fmt.Sprint("key-", i)
		a, _ := PickShard(before, "wf", k)
		b, _ := PickShard(after, "wf", k)
		if a != b {
			require.Equal(t, uint16(3), a, "only keys of the drained shard move")
			moved++
		}
	}
	require.InDelta(t, 10000.0/8, float64(moved), 10000.0/8*0.15)
}

func TestBalance(t *testing.T) {
	t.Parallel()
	cat := Catalog{Readable: shards(8), Writable: shards(8)}
	const keys = 100_000
	counts := map[uint16]int{}
	for i := range keys {
		s, err := PickShard(cat, "onboarding", fmt.Sprintf("evt-%d", i))
		require.NoError(t, err)
		counts[s]++
	}
	want := float64(keys) / 8
	for s, n := range counts {
		require.InDelta(t, want, float64(n), want*0.10, "shard %d has %d keys", s, n)
	}
	require.Len(t, counts, 8)
}

func TestOwnerMovement(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 4, 7} {
		t.Run(fmt.Sprint(n, "to", n+1), func(t *testing.T) {
			t.Parallel()
			var nodes []string
			for i := range n {
				nodes = append(nodes, fmt.Sprintf("node-%d", i))
			}
			grown := append(append([]string(nil), nodes...), "node-new")
			const total = 4096
			moved := 0
			for s := range total {
				before, ok := OwnerOf(uint16(s), nodes)
				require.True(t, ok)
				after, _ := OwnerOf(uint16(s), grown)
				if before != after {
					require.Equal(t, "node-new", after, "shards only move to the new node")
					moved++
				}
			}
			want := 1.0 / float64(n+1)
			require.InDelta(t, want, float64(moved)/total, 0.03, "moved %d of %d", moved, total)
		})
	}
	_, ok := OwnerOf(1, nil)
	require.False(t, ok)
}

func TestMintWorkflowID(t *testing.T) {
	t.Parallel()
	all := shards(8)
	for _, cat := range []Catalog{
		{Readable: all, Writable: all},
		{Readable: all, Writable: []uint16{1, 4}},
		{Readable: []uint16{9}, Writable: []uint16{9}},
	} {
		for i := range 500 {
			key := fmt.Sprint("webhook-", i)
			id, shard, err := MintWorkflowID(cat, "onboarding", key, uuid.NewString)
			require.NoError(t, err)
			keyShard, _ := PickShard(cat, "onboarding", key)
			idShard, _ := PickShard(cat, "onboarding", id)
			require.Equal(t, keyShard, shard)
			require.Equal(t, keyShard, idShard, "a minted id routes to the key's shard")
		}
	}
	_, _, err := MintWorkflowID(Catalog{Readable: all, Writable: all}, "wf", "k", func() string { return "constant" })
	if err != nil {
		require.ErrorIs(t, err, ErrMintExhausted)
	}
}

// The hash is part of the on-disk contract: pin a few values.
func TestScoresArePinned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got, want uint64
	}{
		{ShardScore(0, "onboarding", "evt-1"), 1475037536982365339},
		{ShardScore(65534, "order", ""), 2239297876836740392},
		{OwnerScore(3, "node-a"), 18148114259795167391},
	} {
		require.Equal(t, tc.want, tc.got)
	}
	require.NotEqual(t, ShardScore(0, "ab", "c"), ShardScore(0, "a", "bc"), "the separator keeps fields apart")
	require.NotEqual(t, ShardScore(1, "a", "b"), ShardScore(256, "a", "b"))
}
