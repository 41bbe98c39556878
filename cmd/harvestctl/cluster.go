package main

import (
	"encoding/json"
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
	raw, err := membersJSON(members)
	if err != nil {
		return failed(err)
	}
	return s.emit(raw, func(tw *tabwriter.Writer) { membersTable(tw, members) })
}

// membersJSON puts the members' JSON objects, as the server sent them,
// back into the server's {"members": [...]} body.
func membersJSON(members []client.Member) (json.RawMessage, error) {
	body := struct {
		Members []json.RawMessage `json:"members"`
	}{Members: make([]json.RawMessage, len(members))}
	for i, m := range members {
		body.Members[i] = m.Raw
	}
	return json.Marshal(body)
}
