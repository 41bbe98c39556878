// Command harvestd runs a Harvest node with the demo workflows.
//
//	harvestd dev [flags]
//	harvestd agent --shard ID=DSN [--shard ID=DSN …] [--join HOST:PORT] [flags]
//	harvestd agent --raft-addr HOST:PORT --bootstrap-expect N [--shard ID=DSN …] [--join HOST:PORT] [flags]
//
// dev runs one node serving one shard, on a managed PostgreSQL server under
// the data directory unless --postgres names an existing one. agent runs
// one node of a cluster: it gossips with the nodes it joins and serves the
// shards that the ring gives it. Without raft flags the shards are the
// static --shard catalog, the same on every node. Any raft flag
// (--raft-addr, --advertise-raft, --bootstrap-expect, --max-voters,
// --drain-check-interval) turns on the raft shard catalog instead, kept in
// the data directory (raft.db, snapshots/): --shard then seeds it when the
// cluster bootstraps, and shards are added and drained at run time
// (harvestctl shard). Every flag can also be set through its HARVEST_*
// environment variable. SIGINT or SIGTERM stops the node gracefully (an
// agent releases its shard leases and leaves the cluster); a second signal
// kills the process at once.
//
// It is package server over the demo workflows (onboarding, order,
// noop_chain): a team's own binary is the same few lines over its own
// registry.
package main

import (
	"fmt"
	"os"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/server"
)

func main() {
	reg := harvest.NewRegistry()
	if err := demo.New(demo.NewServices()).Register(reg); err != nil {
		fmt.Fprintln(os.Stderr, "harvestd: register the demo workflows: "+err.Error())
		os.Exit(1)
	}
	server.Main(reg, server.WithUsage("the Harvest durable workflow server, with the demo workflows"))
}
