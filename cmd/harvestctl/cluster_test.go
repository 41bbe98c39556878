package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
)

// fakeCluster is a fixed member list.
type fakeCluster []api.MemberInfo

func (f fakeCluster) Members() []api.MemberInfo { return f }

func TestClusterMembers(t *testing.T) {
	members := fakeCluster{
		{NodeID: "n2", State: "alive", GossipAddr: "10.0.0.2:7946", APIAddr: "10.0.0.2:7233", Version: "0.1.0-dev", Shards: []uint16{1}},
		{NodeID: "n1", State: "alive", GossipAddr: "10.0.0.1:7946", APIAddr: "10.0.0.1:7233", Version: "0.1.0-dev",
			Shards: []uint16{2, 0}, Self: true},
		{NodeID: "n3", State: "dead", GossipAddr: "10.0.0.3:7946", Shards: []uint16{}},
	}
	b := setupWith(t, api.Config{Cluster: members})

	t.Run("Table", func(t *testing.T) {
		table := b.ok(t, "cluster", "members")
		require.Equal(t, []string{
			"NODE  STATE  API            GOSSIP         SHARDS",
			"n1 *  alive  10.0.0.1:7233  10.0.0.1:7946  0,2",
			"n2    alive  10.0.0.2:7233  10.0.0.2:7946  1",
			"n3    dead   -              10.0.0.3:7946  -",
		}, strings.Split(strings.TrimRight(table, "\n"), "\n"), "sorted by node id, shards sorted, self marked")
	})

	t.Run("JSONIsTheServerBody", func(t *testing.T) {
		raw, err := json.Marshal(map[string]any{"members": members})
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(raw, &want))
		require.Equal(t, want, b.okJSON(t, "cluster", "members"))
	})

	t.Run("NoMembers", func(t *testing.T) {
		alone := setup(t) // no cluster view: an empty list
		table := alone.ok(t, "cluster", "members")
		require.Len(t, rows(table, "NODE"), 1, table)
		require.Equal(t, 1, strings.Count(table, "\n"), "the header alone:\n%s", table)
		require.Equal(t, map[string]any{"members": []any{}}, alone.okJSON(t, "cluster", "members"))
	})

	t.Run("ExtraArgumentIsUsageError", func(t *testing.T) {
		r := b.ctl(t, "cluster", "members", "n1")
		require.Equal(t, exitUsage, r.code, "stderr: %s", r.stderr)
		require.Empty(t, r.stdout)
	})
}

// fakeRouting is a cluster view that also tells a fixed routing.
type fakeRouting struct {
	fakeCluster
	routing api.RoutingView
}

func (f fakeRouting) Routing() api.RoutingView { return f.routing }

func TestClusterRouting(t *testing.T) {
	view := fakeRouting{routing: api.RoutingView{
		PlacementEpoch: 4,
		Shards: []api.ShardRoute{
			{ShardID: 2, State: "readable", Owner: "n2", OwnerAPI: "http://10.0.0.2:7233"},
			{ShardID: 0, State: "writable", Owner: "n1", OwnerAPI: "http://10.0.0.1:7233", Self: true},
			{ShardID: 1, State: "writable"},
		},
		Placements: []api.PlacementView{{Readable: []uint16{0, 1, 2}, Writable: []uint16{1, 0}}, {Readable: []uint16{0, 2}, Writable: []uint16{0, 2}}},
	}}
	b := setupWith(t, api.Config{Cluster: view})

	t.Run("Table", func(t *testing.T) {
		table := b.ok(t, "cluster", "routing")
		require.Equal(t, []string{
			"Placement epoch  4",
			"",
			"SHARD  STATE     OWNER  OWNER API",
			"0 *    writable  n1     http://10.0.0.1:7233",
			"1      writable  -      -",
			"2      readable  n2     http://10.0.0.2:7233",
			"",
			"PLACEMENT  READABLE  WRITABLE",
			"current    0,1,2     0,1",
			"older      0,2       0,2",
		}, strings.Split(strings.TrimRight(table, "\n"), "\n"), "shards by id, self marked, placements current first")
	})

	t.Run("JSONIsTheServerBody", func(t *testing.T) {
		raw, err := json.Marshal(view.routing)
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(raw, &want))
		require.Equal(t, want, b.okJSON(t, "cluster", "routing"))
	})

	t.Run("StandaloneNode", func(t *testing.T) {
		alone := setup(t) // no routing source: its own shard
		table := alone.ok(t, "cluster", "routing")
		require.Equal(t, "0", cell(t, table, "Placement epoch"))
		require.Equal(t, [][]string{{"0 *", "writable", "-", "-"}}, rows(table, "0 *"))
		require.Equal(t, [][]string{{"current", "0", "0"}}, rows(table, "current"))
	})
}
