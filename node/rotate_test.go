package node

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/membership"
)

// loadRun sends starts through every node in turn until stopped and
// records every answer that is not a 201.
type loadRun struct {
	sent     atomic.Int64
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	failures []string
}

func startLoad(c *cluster) *loadRun {
	l := &loadRun{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			l.one(c.nodes[i%len(c.nodes)], i)
		}
	}()
	return l
}

func (l *loadRun) one(n *Node, i int) {
	body := fmt.Sprintf(`{"workflow_id":"rot-%d","input":{"activities":0}}`, i)
	res, err := http.Post("http://"+n.Addr()+api.BasePath+"/workflows/noop_chain/start", "application/json", bytes.NewBufferString(body))
	l.sent.Add(1)
	if err == nil {
		res.Body.Close()
	}
	if err != nil || res.StatusCode != http.StatusCreated {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.failures = append(l.failures, fmt.Sprintf("start %d through %s: %v %v", i, n.NodeID(), err, res))
	}
}

// dwell lets the load run for at least d and k more starts: a rotation
// step held this long outlasts gossip's probe interval, so that a node cut
// off by it would be suspected (aliveWatch).
func (l *loadRun) dwell(t *testing.T, k int64, d time.Duration) {
	t.Helper()
	from, until := l.sent.Load(), time.Now().Add(d)
	eventually(t, "load during the rotation", 30*time.Second+d, func() bool {
		return l.sent.Load() >= from+k && time.Now().After(until)
	})
}

// aliveWatch samples every node's view of alive gossip members until
// stopped and keeps the smallest count seen.
type aliveWatch struct {
	fewest atomic.Int64
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func watchAlive(t *testing.T, c *cluster) *aliveWatch {
	w := &aliveWatch{stop: make(chan struct{}), done: make(chan struct{})}
	w.fewest.Store(int64(len(c.nodes)))
	go func() {
		defer close(w.done)
		for {
			for _, n := range c.nodes {
				if k := int64(len(n.gossip.Alive())); k < w.fewest.Load() {
					w.fewest.Store(k)
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { w.end() }) // before the nodes stop
	return w
}

func (w *aliveWatch) end() int64 {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.fewest.Load()
}

// waitMore waits until k more starts were sent.
func (l *loadRun) waitMore(t *testing.T, k int64) {
	t.Helper()
	from := l.sent.Load()
	eventually(t, "load during the rotation", 30*time.Second, func() bool { return l.sent.Load() >= from+k })
}

// TestClusterKeyRotation: three nodes move to a new cluster key in the
// documented steps while starts go through every node (forwarded to the
// shards' owners, signed with the key of the moment), none failing; the
// old key is refused afterwards and gossip keeps every member.
func TestClusterKeyRotation(t *testing.T) {
	c := newRaftCluster(t, 3, 2, time.Hour)
	oldKey, newKey := clusterkeytest.Key(), clusterkeytest.Other()
	load := startLoad(c)
	for _, ring := range []clusterkey.Key{oldKey.Join(newKey), newKey.Join(oldKey), newKey} {
		for _, n := range c.nodes {
			require.NoError(t, n.RotateClusterKey(ctxT(t), ring))
			load.waitMore(t, 3)
		}
	}
	close(load.stop)
	<-load.done
	require.Empty(t, load.failures, "of %d starts", load.sent.Load())
	for _, n := range c.nodes {
		require.Len(t, n.gossip.Alive(), 3, "gossip members of %s", n.NodeID())
	}
	t.Run("TheOldKeyIsRefused", func(t *testing.T) {
		for key, want := range map[*clusterkey.Key]int{&oldKey: http.StatusUnauthorized, &newKey: http.StatusOK} {
			req := request(t, c.nodes[1], "GET", "/internal/catalog/index", nil)
			api.SignNode(req, api.NodeSig{Key: key.Derive(clusterkey.LabelHTTP), From: "n9", To: c.nodes[1].NodeID(), Identity: auth.Anonymous, Time: time.Now()})
			require.Equal(t, want, send(t, req).Status)
		}
	})
	t.Run("RaftStillCommits", func(t *testing.T) {
		r := call(t, c.nodes[2], "POST", "/admin/shards/1/drain", map[string]any{"force": true})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	})
	require.ErrorIs(t, c.nodes[0].RotateClusterKey(context.Background(), clusterkey.Key{}), ErrNoClusterKey)
}

// TestGossipKeyRotation: three nodes with an explicit gossip key
// (--gossip-key-file) move to a new gossip key and, in the same rounds, to
// a new cluster key, in the documented steps, while starts go through
// every node: no start fails, every node stays a gossip member, and the
// new keys alone serve at the end.
func TestGossipKeyRotation(t *testing.T) {
	oldGossip, newGossip := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{8}, 32)
	c := newRaftClusterWindows(t, 2, []time.Duration{time.Hour, time.Hour, time.Hour}, func(cfg *Config) { cfg.Gossip.GossipKey = oldGossip })
	oldKey, newKey := clusterkeytest.Key(), clusterkeytest.Other()
	load, alive := startLoad(c), watchAlive(t, c)
	for _, step := range []struct {
		gossip [][]byte
		key    clusterkey.Key
	}{
		{[][]byte{oldGossip, newGossip}, oldKey.Join(newKey)},
		{[][]byte{newGossip, oldGossip}, newKey.Join(oldKey)},
		{[][]byte{newGossip}, newKey},
	} {
		for _, n := range c.nodes {
			require.NoError(t, n.RotateGossipKey(step.gossip))
			require.NoError(t, n.RotateClusterKey(ctxT(t), step.key))
			load.dwell(t, 3, 2*time.Second)
		}
	}
	close(load.stop)
	<-load.done
	require.Empty(t, load.failures, "of %d starts", load.sent.Load())
	require.Equal(t, int64(3), alive.end(), "no node ever saw a member suspected or lost")
	t.Logf("%d starts during the rotation, none failed", load.sent.Load())
	for _, n := range c.nodes {
		require.Len(t, n.gossip.Alive(), 3, "gossip members of %s", n.NodeID())
	}
	t.Run("AnOldGossipKeyIsRefused", func(t *testing.T) {
		stale := startRogue(t, membership.Config{NodeID: "stale", Join: []string{c.nodes[0].GossipAddr()}, GossipKey: oldGossip, ClusterKey: newKey})
		require.Never(t, func() bool { return len(stale.Alive()) > 1 }, 3*time.Second, 50*time.Millisecond)
	})
	t.Run("TheDerivedKeyRotatesWithTheClusterKey", func(t *testing.T) {
		derived := newRaftCluster(t, 1, 1, time.Hour)
		require.ErrorIs(t, derived.nodes[0].RotateGossipKey([][]byte{newGossip}), membership.ErrGossipKeyDerived)
	})
}
