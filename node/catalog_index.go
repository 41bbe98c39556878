package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
)

// A follower's catalog is current when it has applied every command the
// raft leader had applied a moment ago. raft cannot tell a follower that:
// heartbeats refresh its last contact but carry no commit index, and a
// restarted follower holds only its last snapshot until the leader's
// replication reaches it. So each node asks the leader for its catalog
// index (GET /internal/catalog/index) every indexInterval, and a follower
// counts as current while its own index has reached the last answer and
// that answer is younger than AuthConfig.StaleAfter.
const (
	indexInterval = time.Second
	indexTimeout  = 2 * time.Second
)

// catalogState is what freshness needs of the raft catalog.
type catalogState interface {
	IsLeader() bool
	Catalog() admin.Catalog
}

// leaderIndex is the leader's catalog index as last learned, and when.
type leaderIndex struct {
	mu    sync.Mutex
	index uint64
	at    time.Time
}

func (l *leaderIndex) record(index uint64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index, l.at = index, at
}

// current reports whether cat is current at now within staleAfter.
func (l *leaderIndex) current(cat catalogState, now time.Time, staleAfter time.Duration) bool {
	if cat.IsLeader() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.at.IsZero() && now.Sub(l.at) < staleAfter && cat.Catalog().Index >= l.index
}

// catalogIndex is the leader's catalog index as this node learns it (a
// raft catalog only), its loop started by the first call: tokens and
// webhook receivers ask it whether the catalog is current.
func (n *Node) catalogIndex(ctx context.Context) *leaderIndex {
	if n.catIndex == nil {
		n.catIndex = &leaderIndex{}
		ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		n.indexEnd, n.indexOut = cancel, make(chan struct{})
		go n.watchLeaderIndex(ctx, n.catIndex, n.indexOut)
	}
	return n.catIndex
}

// watchLeaderIndex keeps li up to date until ctx ends.
func (n *Node) watchLeaderIndex(ctx context.Context, li *leaderIndex, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(indexInterval)
	defer tick.Stop()
	log := n.logger("auth")
	for {
		if err := n.learnLeaderIndex(ctx, li); err != nil && ctx.Err() == nil {
			log.Debug().Err(err).Msg("leader catalog index not learned")
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// learnLeaderIndex asks the leader for its catalog index.
func (n *Node) learnLeaderIndex(ctx context.Context, li *leaderIndex) error {
	asked := time.Now()
	if n.admin.IsLeader() {
		return nil // a leader is current by definition
	}
	id, addr := n.admin.Leader()
	if addr == "" {
		return fmt.Errorf("no leader known (%q)", id)
	}
	index, err := n.askIndex(ctx, id, apiURL(n.tls != nil, addr))
	if err != nil {
		return err
	}
	li.record(index, asked) // the answer is at least as new as the question
	return nil
}

// askIndex asks node leader, at base, for its catalog index.
func (n *Node) askIndex(ctx context.Context, leader, base string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, indexTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+api.BasePath+"/internal/catalog/index", nil)
	if err != nil {
		return 0, err
	}
	n.signNode(req, leader, nil)
	res, err := n.nodeClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var body struct {
		Index  uint64 `json:"index"`
		Leader bool   `json:"leader"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK || !body.Leader {
		return 0, errors.New("the catalog index did not come from the leader")
	}
	return body.Index, nil
}
