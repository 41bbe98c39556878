package client

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/ring"
)

func TestRouteOwner(t *testing.T) {
	table := newRouteTable(&Routing{
		Placements: []Placement{{Readable: []uint16{0, 1}, Writable: []uint16{0}}},
		Shards:     []ShardRoute{{ShardID: 0, Self: true}, {ShardID: 1, Owner: "n2", OwnerAPI: "http://10.0.0.2:7233/"}},
	}, "http://base:7233")
	placedOn1 := "" // a key the readable set places on shard 1, which is not writable
	for i := 0; placedOn1 == ""; i++ {
		k := string(rune('a'+i%26)) + string(rune('a'+i/26))
		if s, _ := ring.PickShard(ring.Catalog{Readable: []uint16{0, 1}, Writable: []uint16{0, 1}}, "wf", k); s == 1 {
			placedOn1 = k
		}
	}
	for _, tc := range []struct {
		name string
		r    route
		want string
	}{
		{"ExecutionOnTheBasesShard", byExecution("0000e8f1-7e39-4c5e-9a3a-1c2b3d4e5f60"), "http://base:7233"},
		{"ExecutionOnAnotherOwner", byExecution("0001e8f1-7e39-4c5e-9a3a-1c2b3d4e5f60"), "http://10.0.0.2:7233"},
		{"ExecutionOnAnUnknownShard", byExecution("0009e8f1-7e39-4c5e-9a3a-1c2b3d4e5f60"), ""},
		{"MalformedExecutionID", byExecution("not-an-id"), ""},
		{"KeyOnANonWritableShardGoesToTheWritableOne", byKey("wf", "", placedOn1), "http://base:7233"},
		{"NoKeyIsNotRouted", byKey("wf", "", ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, table.ownerOf(tc.r))
		})
	}
}
