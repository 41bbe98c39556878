package admin

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Match them with errors.Is.
var (
	// ErrNoClusterKey: Rotate was given the zero key.
	ErrNoClusterKey = errors.New("no cluster key")
	// ErrNotLeader: the call needs the raft leader and this node is not
	// it. The concrete error is a *NotLeaderError naming the leader.
	ErrNotLeader = errors.New("not the raft leader")
	// ErrUnknownShard: the command names a shard the catalog does not
	// have.
	ErrUnknownShard = errors.New("unknown shard")
	// ErrShardExists: AddShard names a shard the catalog already has.
	ErrShardExists = errors.New("shard already exists")
	// ErrInvalidTransition: SetShardState asks for a state change the
	// lifecycle does not allow (see ShardState), or an unknown state.
	ErrInvalidTransition = errors.New("invalid shard state transition")
	// ErrInvalidCommand: a command field is out of range (shard id 65535,
	// empty DSN, a window that is not positive, a bootstrap without
	// shards).
	ErrInvalidCommand = errors.New("invalid command")
	// ErrUnknownPeer: RemovePeer names a server that is not in the raft
	// configuration.
	ErrUnknownPeer = errors.New("unknown raft peer")
	// ErrRemoveLeader: RemovePeer names the leader itself (stop it
	// instead: the others elect a new leader, which can remove it).
	ErrRemoveLeader = errors.New("the leader cannot remove itself")
	// ErrOutcomeUnknown: a raft change was in flight when leadership was
	// lost or the deadline passed; it may or may not have been applied.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrScheduleExists: PutSchedule names a live schedule.
	ErrScheduleExists = errors.New("schedule exists")
	// ErrUnknownSchedule: the command names no live schedule.
	ErrUnknownSchedule = errors.New("unknown schedule")
	// ErrTokenExists: PutToken names a token id the catalog holds with
	// another secret.
	ErrTokenExists = errors.New("a token with that id exists")
	// ErrUnknownToken: RevokeToken names a token the catalog does not have.
	ErrUnknownToken = errors.New("unknown token")
	// ErrAlreadyStarted is returned by Start on an Admin that is running.
	ErrAlreadyStarted = errors.New("admin already started")
	// ErrNotStarted is returned by calls that need raft before Start.
	ErrNotStarted = errors.New("admin not started")
	// ErrStopped is returned by Start and other calls after Stop.
	ErrStopped = errors.New("admin stopped")
	// ErrHandshake: a raft connection failed its handshake (the peer does
	// not hold the cluster key, or did not answer in time) and was
	// closed.
	ErrHandshake = errors.New("raft handshake failed")

	// errWrongAnswer: the peer's handshake answer is not the HMAC the
	// cluster key gives.
	errWrongAnswer = errors.New("wrong answer: the peer does not hold the cluster key")
)

// NotLeaderError is returned by leader-only calls on a follower. LeaderID
// and LeaderAPIAddr name the leader this node knows of (its HTTP API
// address comes from gossip); both are empty while no leader is known,
// for instance during an election. It matches ErrNotLeader.
type NotLeaderError struct {
	LeaderID      string
	LeaderAPIAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "not the raft leader; no leader known"
	}
	return fmt.Sprintf("not the raft leader; leader is %s at %q", e.LeaderID, e.LeaderAPIAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }
