// Package node wires and runs one harvestd process: a managed or external
// PostgreSQL database, the schema migrations, one shard engine and the HTTP
// API in front of it.
//
// # Lifecycle
//
// New checks a Config and returns a stopped Node. Start brings the parts up
// in dependency order:
//
//	data dir and node id → managed PostgreSQL (unless PostgresDSN is set)
//	→ database "harvest" → connection pool → migrations
//	→ engine (takes the shard lease) → HTTP API on its listener
//
// Stop takes them down in reverse: the HTTP server drains in-flight
// requests, the engine stops its loops and releases the shard lease, the
// pool closes and the managed PostgreSQL server shuts down. A Start that
// fails undoes what it had brought up, so Stop is safe (and a no-op) after
// a failed Start. A Node starts at most once.
//
// # Node identity
//
// The shard lease names its owner by node id. Unless Config.NodeID is set,
// the node reads its id from DataDir/node-id, generating and persisting a
// random one on first start. A restarted process therefore presents the
// same id and re-acquires its own lease at once instead of waiting for it
// to expire.
//
// # Cluster key
//
// A node with Config.Gossip needs Config.ClusterKey (ErrNoClusterKey
// otherwise). The node hands it to gossip, which derives the gossip key
// from it (unless Gossip.GossipKey is set) and proves and checks
// membership with it, and to the raft catalog, whose transport
// authenticates every connection with it. A process without the key is
// never a member: it owns no shard, is never a raft peer and gets no
// forwarded request (docs/security.md, "Cluster credential").
//
// # Logging
//
// Every component logs through a child of Config.Logger carrying node_id
// and a component field (node, postgres, engine, api, http); messages are
// static and facts are fields. A Config without a Logger logs JSON lines
// to stderr at info (DefaultLogger); zerolog.Nop() silences the node.
package node
