package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster",
		Subcommands: []*cli.Command{{
			Name:   "members",
			Usage:  "list the members as the node at --addr sees them; * marks that node",
			Action: membersAction,
		}, {
			Name:   "routing",
			Usage:  "show where the node at --addr sends requests: each shard's state and owner, and the placements; * marks that node's shards",
			Action: routingAction,
		}, {
			Name:   "peers",
			Usage:  "list the raft servers that keep the shard catalog",
			Action: peersAction,
		}, {
			Name:      "remove-peer",
			Usage:     "remove a raft server, such as a dead node that will not come back",
			ArgsUsage: "<node-id>",
			Action:    removePeerAction,
		}},
	}
}

func membersAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	members, err := s.api.Members(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "members", members, func(m client.Member) json.RawMessage { return m.Raw }, membersTable)
}

func routingAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	r, err := s.api.Routing(c.Context)
	if err != nil {
		return failed(err)
	}
	return s.emit(r.Raw, func(tw *tabwriter.Writer) { routingTable(tw, r) })
}

// routingTable shows the epoch, the shards by id and the placements,
// current first.
func routingTable(tw *tabwriter.Writer, r *client.Routing) {
	kv(tw, "Placement epoch", fmt.Sprint(r.PlacementEpoch))
	fmt.Fprintln(tw)
	shards := slices.SortedFunc(slices.Values(r.Shards), func(a, b client.ShardRoute) int { return cmp.Compare(a.ShardID, b.ShardID) })
	row(tw, "SHARD", "STATE", "OWNER", "OWNER API")
	for _, sh := range shards {
		id := fmt.Sprint(sh.ShardID)
		if sh.Self {
			id += " *"
		}
		row(tw, id, sh.State, dash(sh.Owner), dash(sh.OwnerAPI))
	}
	fmt.Fprintln(tw)
	row(tw, "PLACEMENT", "READABLE", "WRITABLE")
	for i, p := range r.Placements {
		name := "older" // still inside the idempotency window
		if i == 0 {
			name = "current"
		}
		row(tw, name, shardList(p.Readable), shardList(p.Writable))
	}
}

func peersAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	peers, err := s.api.RaftPeers(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "peers", peers, func(p client.Peer) json.RawMessage { return p.Raw }, peersTable)
}

func removePeerAction(c *cli.Context) error {
	s, err := begin(c, "node-id")
	if err != nil {
		return err
	}
	id := s.args[0]
	if err := s.api.RemovePeer(c.Context, id); err != nil {
		return failed(err)
	}
	raw, err := json.Marshal(map[string]any{"ok": true, "removed": id})
	if err != nil {
		return failed(err)
	}
	return s.emit(raw, func(tw *tabwriter.Writer) { kv(tw, "Removed peer", id) })
}

// emitList writes the table of items, or their JSON objects, as the
// server sent them, back in the server's {"<key>": [...]} body.
func emitList[T any](s *session, key string, items []T, raw func(T) json.RawMessage, table func(*tabwriter.Writer, []T)) error {
	list := make([]json.RawMessage, len(items))
	for i, it := range items {
		list[i] = raw(it)
	}
	body, err := json.Marshal(map[string][]json.RawMessage{key: list})
	if err != nil {
		return failed(err)
	}
	return s.emit(body, func(tw *tabwriter.Writer) { table(tw, items) })
}

// peersTable lists the raft servers by id.
func peersTable(tw *tabwriter.Writer, peers []client.Peer) {
	peers = slices.SortedFunc(slices.Values(peers), func(a, b client.Peer) int { return cmp.Compare(a.ID, b.ID) })
	row(tw, "ID", "ADDRESS", "VOTER", "LEADER")
	for _, p := range peers {
		row(tw, p.ID, p.Addr, fmt.Sprint(p.Voter), fmt.Sprint(p.Leader))
	}
}
