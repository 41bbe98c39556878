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
			api.SignNode(req, key.Derive(clusterkey.LabelHTTP), "n9", auth.Anonymous, time.Now())
			require.Equal(t, want, send(t, req).Status)
		}
	})
	t.Run("RaftStillCommits", func(t *testing.T) {
		r := call(t, c.nodes[2], "POST", "/admin/shards/1/drain", map[string]any{"force": true})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	})
	require.ErrorIs(t, c.nodes[0].RotateClusterKey(context.Background(), clusterkey.Key{}), ErrNoClusterKey)
}
