// Package membership tells a harvestd node which nodes are in the cluster
// and where to reach them. It runs hashicorp/memberlist (SWIM gossip over
// TCP and UDP) and publishes each node's Meta: node id, HTTP API address,
// raft address and version.
//
// Membership never decides anything by itself: it keeps a member list and
// nudges Changed whenever that list changes. Consumers (the ring, shard
// ownership) re-read Alive or Members on each nudge and on a ticker of
// their own.
//
// # Lifecycle
//
// New checks a Config and returns a stopped Membership. Start binds the
// gossip port, creates the memberlist and returns at once; a background
// loop joins the Config.Join seeds, retrying with backoff (250 ms doubling
// to 10 s) until one answers. Stop announces the departure, calls
// memberlist's Leave (bounded by Config.LeaveTimeout) and shuts the
// memberlist down; peers then see the node as StateLeft. A process that
// dies without Stop is declared StateDead by its peers after memberlist's
// probe and suspicion timeouts (about 5-7 s with ProfileLAN).
//
// # Member states
//
// Members lists every member this node has heard of: StateAlive,
// StateDead and StateLeft, including itself. memberlist itself forgets
// dead and left nodes (after GossipToTheDeadTime) and does not say whether
// a node left or failed (hashicorp/memberlist#293), so the package keeps
// its own table, fed by memberlist's EventDelegate, and a leaving node
// sets a flag in its metadata just before it leaves. The leave can
// overtake that flag on its way to a peer, which then records a failure;
// its next push/pull with a node that saw the leave (its own rejoin
// attempt, or the push/pull interval) corrects it to StateLeft
// (mergeDelegate). Dead and left
// members are forgotten after Config.ReconnectTimeout. memberlist's
// "suspect" state is not observable: a suspect member counts as alive.
//
// # Re-join
//
// Once two groups of nodes have declared each other dead (a network
// partition longer than the suspicion timeout), memberlist never talks to
// the other group again, even after the network heals. So every
// Config.RejoinInterval, while this node knows a dead member or sees fewer
// alive members than seeds, it re-joins the seeds and the dead members'
// addresses. A node restarted with the same NodeID and address rejoins
// the same way: its peers see it alive again.
//
// # Encryption
//
// With Config.GossipKey set (16, 24 or 32 bytes; ParseGossipKey reads the
// base64 form), all gossip is encrypted and authenticated with AES-GCM,
// and nodes without the key can neither join nor be joined.
//
// # Concurrency
//
// memberlist calls the event delegate with its internal lock held. The
// delegate only copies the node into the table and nudges buffered(1)
// channels without blocking; everything else (logging the change,
// re-joining) happens in the background loop or in the consumer.
//
// # Logging
//
// Lines go to Config.Logger with component=membership: one info line per
// member state change (member_id, member_state, gossip_addr, api_addr,
// raft_addr), warnings for failed initial joins, and memberlist's own log
// lines at debug level (fields memberlist_level and line).
package membership
