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
