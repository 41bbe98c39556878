// Package admin runs the raft group that agrees on Harvest's shard
// catalog: which shard databases exist, which take new placements, the
// placement epochs inside the idempotency window, and the cluster
// settings. Every harvestd node runs an Admin; 3 (or 5) of them are
// voters, the rest non-voters that follow the log.
//
// # Catalog
//
// The replicated state is a Catalog. Each shard has a ShardState
// (readable, writable, draining, read_only; see ShardState for the
// transitions). Every shard is readable; the writable ones take new
// placements. Each command that changes the readable or writable set
// appends an Epoch stamped with the command's time, and epochs whose
// successor began before the idempotency window are pruned, so that
// Catalog.WithinWindow gives routing every placement a key inside the
// window may have been placed under (DESIGN §3, placement epochs).
//
// # Commands
//
// A raft log entry is a CommandType byte followed by the command's JSON
// body: Bootstrap, AddShard, SetShardState, SetSettings. Commands carry
// the proposer's timestamp, so applying them is deterministic. The FSM
// returns business rejections (ErrUnknownShard, ErrShardExists,
// ErrInvalidTransition, ErrInvalidCommand) as values, which Apply returns
// to the proposer; an entry it cannot decode panics, because skipping it
// would make this node diverge.
//
// # Cluster formation
//
// With Config.BootstrapExpect N (Consul's bootstrap_expect), a node
// without raft state bootstraps once N members with a raft address are
// alive in gossip: the first N by node id, all voters. Every node of the
// new cluster computes the same configuration. Nodes started with N = 0,
// and nodes beyond the first N, wait for the leader to add them.
//
// The leader reconciles the raft configuration with gossip on every
// membership nudge and every Config.ReconcileInterval: alive members that
// are not servers are added (voters up to Config.MaxVoters, then
// non-voters), members that left gracefully are removed, dead ones stay
// until RemovePeer or until they come back, and a non-voter is promoted
// whenever there are fewer voters than MaxVoters. The first leader that
// finds the catalog empty proposes Bootstrap with Config.InitialShards.
//
// # Writes
//
// Apply, RemovePeer and the leader's own proposals run on the leader only.
// On a follower they return a *NotLeaderError with the leader's id and
// HTTP API address (from gossip) so that the API layer can forward the
// request. raft takes timeouts, not contexts: the ctx deadline becomes the
// raft timeout (default 10 s).
//
// # Transport authentication
//
// raft's TCP transport runs over a stream layer that authenticates every
// connection, both ways, with Config.ClusterKey (required): the acceptor
// sends a random 32-byte challenge, the dialer answers
// HMAC-SHA256(ClusterKey.Derive(LabelRaft), "raft-dial" | its challenge |
// the dialer's own challenge) together with that challenge, and the
// acceptor answers HMAC(…, "raft-accept" | both challenges). Each side
// checks the other's answer in constant time; a wrong or missing answer
// within 5 s closes the connection and is logged at warn ("raft
// connection refused" on the acceptor, "raft handshake failed" on the
// dialer, fields remote_addr or raft_addr; never key material). So a
// process without the cluster key that reaches the raft port cannot send
// AppendEntries or RequestVote (which would depose the leader), and a
// node never replicates the catalog, which holds the shard DSNs, to an
// impostor at a peer's raft address. The handshake does not encrypt: the
// raft traffic after it is plain TCP, readable and alterable by whoever
// is on the path. Membership is gated in gossip as well (see package
// membership): a member that cannot prove the cluster key is never seen
// by the reconcile loop or by bootstrap, so it is never added to raft.
//
// # Storage
//
// Config.DataDir holds raft.db (log and stable store, bbolt, in
// raft-boltdb's layout) and snapshots/ (file snapshots, 2 kept). A
// snapshot is the catalog as JSON.
//
// # Concurrency
//
// raft applies commands on one goroutine. The FSM publishes a copy of the
// catalog after each apply; Catalog returns it without locking, and
// Changed is nudged (buffered, never blocking) so that consumers re-read
// it.
//
// # Logging
//
// Lines go to Config.Logger with component=admin: one info line per
// leadership change, bootstrap and raft configuration change. raft's own
// hclog output goes to the same logger at debug level (message "raft",
// fields raft_level, raft_module, line and raft's key-value pairs).
package admin
