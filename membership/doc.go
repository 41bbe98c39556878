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
// and nodes without the key can neither join nor be joined. Without it,
// a Config.ClusterKey provides one: ClusterKey.Derive(LabelGossip), 32
// bytes (AES-256).
//
// # Cluster key
//
// The gossip key only says who may gossip, and an operator may share an
// explicit one more widely than the cluster credential. So with
// Config.ClusterKey set, a node must also prove that it holds the cluster
// key: its metadata carries a member proof, HMAC-SHA256 under
// ClusterKey.Derive(LabelMember) of its node id (the memberlist name), API
// address, raft address, version and leaving flag, truncated to 128 bits
// (22 base64 characters, key "p"). Receivers check it in constant time:
//   - every alive message, gossiped or merged from a push/pull, goes
//     through an AliveDelegate that refuses a node without a valid proof,
//     so memberlist never adds it to its member list;
//   - a joining push/pull whose state lists such a node is refused as a
//     whole, so the join fails;
//   - the event delegate drops such a node too, should one get past.
//
// A refused node never appears in Members or Alive, so nothing built on
// them (raft reconcile and bootstrap, shard ownership, request
// forwarding) sees it. Refusals are counted (Rejected) and logged at
// warn, at most one line per RejoinInterval. What a holder of the gossip
// key without the cluster key can still do: read and disturb gossip (for
// instance send false suspicions or forged alive messages for real
// members, which are refused but cost the members work), and replay a
// real member's metadata under that member's name, which points at the
// real member's addresses. It cannot add a member, change a member's
// addresses or take a shard.
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
// raft_addr), warnings for failed initial joins and for refused members
// (rejected, member_id, gossip_addr), and memberlist's own log lines at
// debug level (fields memberlist_level and line).
package membership
