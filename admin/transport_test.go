package admin

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
)

func TestRaftHandshake(t *testing.T) {
	t.Parallel()
	raftKey := clusterkeytest.Key().Derive(clusterkey.LabelRaft)
	otherKey := clusterkeytest.Other().Derive(clusterkey.LabelRaft)

	t.Run("OverAPipe", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name      string
			dialKey   []byte
			dialer    bool // false: the dialer sends nothing
			wantError bool
		}{
			{name: "SameKey", dialKey: raftKey, dialer: true},
			{name: "OtherKey", dialKey: otherKey, dialer: true, wantError: true},
			{name: "SilentDialer", dialer: false, wantError: true},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				accepting, dialing := net.Pipe()
				t.Cleanup(func() { _ = accepting.Close(); _ = dialing.Close() })
				acceptor := &authLayer{ring: newRaftKeys(raftKey), timeout: 200 * time.Millisecond, log: zerolog.Nop()}
				dialer := &authLayer{ring: newRaftKeys(tc.dialKey), timeout: 200 * time.Millisecond, log: zerolog.Nop()}
				dialed := make(chan error, 1)
				go func() {
					if !tc.dialer {
						_, err := io.ReadFull(dialing, make([]byte, nonceSize)) // reads the challenge, never answers
						dialed <- err
						return
					}
					dialed <- dialer.handshake(dialing, dialHandshake)
				}()
				err := acceptor.handshake(accepting, acceptHandshake)
				dialErr := <-dialed
				if !tc.wantError {
					require.NoError(t, err)
					require.NoError(t, dialErr)
					return
				}
				require.ErrorIs(t, err, ErrHandshake)
				if tc.dialer {
					require.ErrorIs(t, dialErr, ErrHandshake, "the dialer learns it too")
				}
			})
		}
	})

	t.Run("PeerWithoutTheKeyCannotDeposeTheLeader", func(t *testing.T) {
		t.Parallel()
		c := setup(t, 3)
		c.bootstrap(t, 1) // one voter: its term never moves by itself
		id, a := c.leader(t)
		rn, err := a.running()
		require.NoError(t, err)
		term := rn.raft.CurrentTerm()

		plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
		require.NoError(t, err)
		t.Cleanup(func() { _ = plain.Close() })
		wrongKey := wrongKeyTransport(t, otherKey)
		for name, trans := range map[string]*raft.NetworkTransport{"PlainTCP": plain, "WrongKey": wrongKey} {
			// AppendEntries with a higher term: raft turns any receiver
			// into a follower of the sender.
			req := &raft.AppendEntriesRequest{
				RPCHeader: raft.RPCHeader{ID: []byte("rogue"), Addr: []byte(trans.LocalAddr())},
				Term:      term + 10,
			}
			// The acceptor's first bytes are its handshake challenge: a
			// client without the handshake reads them as the RPC's answer,
			// which fails to decode or decodes to nothing granted (CI saw
			// both). What matters is that the RPC is not honoured.
			var resp raft.AppendEntriesResponse
			err := trans.AppendEntries(raft.ServerID(id), raft.ServerAddress(a.Addr()), req, &resp)
			require.True(t, err != nil || !resp.Success, "%s: AppendEntries went through", name)
		}
		var vote raft.RequestVoteResponse
		err = plain.RequestVote(raft.ServerID(id), raft.ServerAddress(a.Addr()), &raft.RequestVoteRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("rogue"), Addr: []byte(plain.LocalAddr())},
			Term:      term + 10, LeadershipTransfer: true,
		}, &vote)
		require.True(t, err != nil || !vote.Granted, "RequestVote went through")

		require.Equal(t, term, rn.raft.CurrentTerm(), "the leader's term moved")
		require.Equal(t, raft.Leader, rn.raft.State())
		lid, _ := a.Leader()
		require.Equal(t, id, lid)
		c.apply(t, SetSettings{IdempotencyWindow: time.Hour}) // raft still works
	})
}

// wrongKeyTransport is a raft transport that authenticates with key.
func wrongKeyTransport(t *testing.T, key []byte) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &authLayer{ln: ln, ring: newRaftKeys(key), timeout: handshakeTimeout, log: zerolog.Nop()},
		MaxPool: 1,
		Timeout: time.Second,
	})
	t.Cleanup(func() { _ = trans.Close() })
	return trans
}

// TestHandshakeRotation: during a cluster key rotation a node holding
// both keys accepts a peer that dials with either, and after Rotate drops
// the old key a peer still dialing with it is refused.
func TestHandshakeRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := clusterkeytest.Key(), clusterkeytest.Other()
	shake := func(t *testing.T, acceptor, dialer *authLayer) (acceptErr, dialErr error) {
		t.Helper()
		accepting, dialing := net.Pipe()
		t.Cleanup(func() { _ = accepting.Close(); _ = dialing.Close() })
		dialed := make(chan error, 1)
		go func() { dialed <- dialer.handshake(dialing, dialHandshake) }()
		acceptErr = acceptor.handshake(accepting, acceptHandshake)
		return acceptErr, <-dialed
	}
	layer := func(k clusterkey.Key) *authLayer {
		return &authLayer{ring: newRaftKeys(k.DeriveAll(clusterkey.LabelRaft)...), timeout: 200 * time.Millisecond, log: zerolog.Nop()}
	}
	both := layer(newKey.Join(oldKey))
	for name, dialer := range map[string]*authLayer{"OldKey": layer(oldKey), "NewKey": layer(newKey), "BothNewFirst": layer(newKey.Join(oldKey)), "BothOldFirst": layer(oldKey.Join(newKey))} {
		t.Run("Accepts"+name, func(t *testing.T) {
			acceptErr, dialErr := shake(t, both, dialer)
			require.NoError(t, acceptErr)
			require.NoError(t, dialErr)
		})
	}
	t.Run("OldKeyRefusedAfterRotate", func(t *testing.T) {
		a := &Admin{raftKeys: newRaftKeys(newKey.Join(oldKey).DeriveAll(clusterkey.LabelRaft)...)}
		require.NoError(t, a.Rotate(newKey))
		acceptor := &authLayer{ring: a.raftKeys, timeout: 200 * time.Millisecond, log: zerolog.Nop()}
		acceptErr, dialErr := shake(t, acceptor, layer(oldKey))
		require.ErrorIs(t, acceptErr, ErrHandshake)
		require.ErrorIs(t, dialErr, ErrHandshake)
		require.ErrorIs(t, a.Rotate(clusterkey.Key{}), ErrNoClusterKey)
	})
}
