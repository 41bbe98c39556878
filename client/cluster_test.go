package client_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

func TestMembers(t *testing.T) {
	t.Parallel()

	t.Run("DecodesEachMemberAndKeepsItsJSON", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"members":[
			{"node_id":"n1","state":"alive","gossip_addr":"10.0.0.1:7946","api_addr":"10.0.0.1:7233","version":"v","shards":[0,2],"self":true,"zone":"a"},
			{"node_id":"n2","state":"dead","shards":[],"self":false}]}`)
		members, err := c.Members(ctxT(t))
		require.NoError(t, err)
		r := b.next(t)
		require.Equal(t, http.MethodGet, r.method)
		require.Equal(t, "/api/harvest/cluster/members", r.path)
		require.Len(t, members, 2)
		raw0 := members[0].Raw
		members[0].Raw, members[1].Raw = nil, nil
		require.Equal(t, []client.Member{
			{NodeID: "n1", State: "alive", GossipAddr: "10.0.0.1:7946", APIAddr: "10.0.0.1:7233", Version: "v", Shards: []uint16{0, 2}, Self: true},
			{NodeID: "n2", State: "dead", Shards: []uint16{}},
		}, members)
		require.Contains(t, string(raw0), `"zone":"a"`, "Raw keeps fields the struct lacks")
	})

	t.Run("EmptyList", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusOK, `{"members":[]}`)
		members, err := c.Members(ctxT(t))
		require.NoError(t, err)
		require.Empty(t, members)
	})

	t.Run("ErrorAnswer", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusServiceUnavailable, `{"error":"down","code":"unavailable"}`)
		_, err := c.Members(ctxT(t))
		require.ErrorIs(t, err, client.ErrUnavailable)
	})
}

func TestRouting(t *testing.T) {
	t.Parallel()

	t.Run("StandaloneNodeServesItsShard", func(t *testing.T) {
		t.Parallel()
		b := setupServer(t)
		r, err := b.api.Routing(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, uint64(0), r.PlacementEpoch)
		require.Equal(t, []client.ShardRoute{{ShardID: 0, State: "writable", Self: true}}, r.Shards)
		require.Equal(t, []client.Placement{{Readable: []uint16{0}, Writable: []uint16{0}}}, r.Placements)
		require.Contains(t, string(r.Raw), `"placement_epoch":0`)
	})

	t.Run("DecodesAClusterAnswer", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"placement_epoch":7,"shards":[
			{"shard_id":0,"state":"writable","owner":"n1","owner_api":"http://10.0.0.1:7233","self":true},
			{"shard_id":1,"state":"readable","self":false}],
			"placements":[{"readable":[0,1],"writable":[0]},{"readable":[0,1],"writable":[0,1]}]}`)
		r, err := c.Routing(ctxT(t))
		require.NoError(t, err)
		req := b.next(t)
		require.Equal(t, http.MethodGet, req.method)
		require.Equal(t, "/api/harvest/cluster/routing", req.path)
		require.Equal(t, uint64(7), r.PlacementEpoch)
		require.Equal(t, []client.ShardRoute{
			{ShardID: 0, State: "writable", Owner: "n1", OwnerAPI: "http://10.0.0.1:7233", Self: true},
			{ShardID: 1, State: "readable"},
		}, r.Shards)
		require.Equal(t, []client.Placement{{Readable: []uint16{0, 1}, Writable: []uint16{0}}, {Readable: []uint16{0, 1}, Writable: []uint16{0, 1}}},
			r.Placements)
	})
}
