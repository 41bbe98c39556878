package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// Atomic batch starts: POST /workflows/batch_start with "atomic": true.
//
// Every item is checked first (a bad item fails the batch with a 4xx that
// names it, "item": its index), then placed: the items must all belong to
// one shard (by workflow id, else key; an item with neither goes wherever
// the others do), else 400 spans_shards. The batch goes to that shard's
// owner whole, which starts its items in one transaction or none
// (engine.StartAtomic): an item whose workflow id has an open run fails the
// batch with 409, and nothing stays written. A keyed item whose key has a
// live claim answers that claim's run (200, deduplicated), so a batch
// re-sent after a lost answer creates nothing new. An item placed on
// another shard by an earlier catalog epoch, where it has a claim or a
// run, fails the batch with 409 (send it without atomic).

const codeSpansShards = "spans_shards"

// atomicItem is one checked item: its start, its routing key.
type atomicItem struct {
	req     engine.StartRequest
	routing string
}

// batchAtomic serves an atomic batch.
func (s *Server) batchAtomic(c *gin.Context, body *batchBody) {
	items, err := s.atomicItems(c, body.Items)
	if err != nil {
		s.fail(c, err)
		return
	}
	shard, ok := s.atomicShard(c, items, body.raw)
	if !ok {
		return
	}
	reqs, err := s.atomicRequests(c, items, shard.id)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := shard.s.StartAtomic(c.Request.Context(), reqs)
	if err != nil {
		s.fail(c, s.atomicError(c, err))
		return
	}
	c.JSON(http.StatusOK, gin.H{"results": atomicAnswers(items, res)})
}

// atomicItems decodes and checks every item as the start route would.
func (s *Server) atomicItems(c *gin.Context, raws []json.RawMessage) ([]atomicItem, error) {
	items := make([]atomicItem, len(raws))
	for i, raw := range raws {
		item, err := s.atomicItem(c, raw)
		if err != nil {
			return nil, itemError(i, s.classify(c, err))
		}
		items[i] = item
	}
	return items, nil
}

func (s *Server) atomicItem(c *gin.Context, raw json.RawMessage) (atomicItem, error) {
	if int64(len(raw)) > s.cfg.MaxBodyBytes {
		return atomicItem{}, &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: fmt.Sprintf("the item is over the body limit of %d bytes", s.cfg.MaxBodyBytes)}
	}
	var item batchItem
	if err := decodeObject(raw, &item); err != nil {
		return atomicItem{}, err
	}
	if err := checkWorkflowName(c, "workflow_name", item.WorkflowName); err != nil {
		return atomicItem{}, err
	}
	key := deref(item.IdempotencyKey)
	if item.IdempotencyKey != nil {
		if err := checkKey(c, "idempotency_key", key); err != nil {
			return atomicItem{}, err
		}
	}
	req, err := s.startRequest(item.WorkflowName, key, &startBody{WorkflowID: item.WorkflowID, Input: item.Input})
	if err != nil {
		return atomicItem{}, err
	}
	return atomicItem{req: req, routing: cmp.Or(item.WorkflowID, key)}, nil
}

// atomicTarget is the shard an atomic batch runs on, served here.
type atomicTarget struct {
	id uint16
	s  Shard
}

// atomicShard places the batch on its one shard and serves it here, or
// forwards it there (false: answered).
func (s *Server) atomicShard(c *gin.Context, items []atomicItem, raw []byte) (atomicTarget, bool) {
	id, err := s.placeAtomic(c, items)
	if err != nil {
		s.fail(c, err)
		return atomicTarget{}, false
	}
	t, err := s.router.ForShard(id)
	if err != nil {
		s.fail(c, err)
		return atomicTarget{}, false
	}
	shard := s.serveOrForward(c, t, raw)
	return atomicTarget{id: id, s: shard}, shard != nil
}

// placeAtomic is the one shard of the items, or an error: items span
// shards, or an earlier epoch's shard holds one of them.
func (s *Server) placeAtomic(c *gin.Context, items []atomicItem) (uint16, error) {
	if id, ok := pinnedShard(c); ok {
		return id, nil // the forwarding node placed the batch
	}
	var (
		shards []uint16
		epoch  uint64
	)
	for i, it := range items {
		if it.routing == "" {
			continue
		}
		p, err := s.router.Place(it.req.WorkflowName, it.routing)
		if err != nil {
			return 0, err
		}
		if err := s.checkEarlierAtomic(c, i, it, p); err != nil {
			return 0, err
		}
		if !slices.Contains(shards, p.Shard) {
			shards = append(shards, p.Shard)
		}
		epoch = max(epoch, p.Epoch)
	}
	switch len(shards) {
	case 0:
		t, err := s.router.ForStart(items[0].req.WorkflowName, "", "")
		return t.ShardID, err
	case 1:
		if epoch > 0 {
			c.Set(epochKey, epoch)
		}
		return shards[0], nil
	}
	slices.Sort(shards)
	return 0, &apiError{status: http.StatusBadRequest, code: codeSpansShards,
		msg:   fmt.Sprintf("an atomic batch runs on one shard; these items belong to shards %v", shards),
		extra: gin.H{"shards": shards}}
}

// checkEarlierAtomic claims an item's routing key on the shards earlier
// epochs placed it on, as a single start does (checkEarlier); an item
// found there cannot join a batch on its new shard.
func (s *Server) checkEarlierAtomic(c *gin.Context, i int, it atomicItem, p Placement) error {
	if len(p.Earlier) == 0 || p.Epoch == 0 {
		return nil
	}
	req := engine.ClaimRequest{WorkflowName: it.req.WorkflowName, WorkflowID: it.req.WorkflowID,
		IdempotencyKey: it.req.IdempotencyKey, Epoch: p.Epoch, Target: p.Shard}
	for _, shard := range p.Earlier {
		r, err := s.askShard(c, shard, req, true)
		switch {
		case err != nil:
			return itemError(i, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
				msg: fmt.Sprintf("shard %d, where this item was placed earlier, cannot be checked: %v", shard, err)})
		case r.Moved != nil:
			return itemError(i, s.classify(c, &engine.MovedError{Shard: r.Moved.ShardID, Epoch: r.Moved.Epoch}))
		case r.Claim != nil || r.Holder != nil:
			return itemError(i, &apiError{status: http.StatusConflict, code: codeConflict,
				msg: fmt.Sprintf("started on shard %d under an earlier placement: send it without atomic", shard)})
		}
	}
	return nil
}

// atomicRequests readies the items' starts for their shard: placements,
// minted workflow ids.
func (s *Server) atomicRequests(c *gin.Context, items []atomicItem, shard uint16) ([]engine.StartRequest, error) {
	reqs := make([]engine.StartRequest, len(items))
	epoch, _ := c.Get(epochKey)
	for i, it := range items {
		req := it.req
		req.AllowTerminate = mayTerminate(c)
		req.Placement = atomicPlacement(c, epoch, it.routing)
		if req.WorkflowID == "" {
			id, err := s.router.MintWorkflowID(req.WorkflowName, shard)
			if err != nil {
				return nil, err
			}
			req.WorkflowID = id
		}
		reqs[i] = req
	}
	return reqs, nil
}

// atomicPlacement is an item's placement: the forwarding node's epoch, or
// the one this node placed the batch under.
func atomicPlacement(c *gin.Context, epoch any, routing string) *engine.Placement {
	if _, pinned := pinnedShard(c); pinned {
		return forwardedPlacement(c, routing)
	}
	if e, ok := epoch.(uint64); ok && e > 0 && routing != "" {
		return &engine.Placement{Epoch: e, RoutingKey: routing}
	}
	return nil
}

// atomicError names the item an atomic batch failed on.
func (s *Server) atomicError(c *gin.Context, err error) error {
	var ae *engine.AtomicError
	if !errors.As(err, &ae) {
		return err
	}
	return itemError(ae.Index, s.classify(c, ae.Err))
}

// itemError is e about items[i]: its message says so, "item" is i.
func itemError(i int, e *apiError) *apiError {
	out := *e
	out.msg = fmt.Sprintf("items[%d]: %s", i, e.msg)
	out.extra = gin.H{"item": i}
	for k, v := range e.extra {
		out.extra[k] = v
	}
	return &out
}

// atomicAnswers are the per-item answers of a committed atomic batch.
func atomicAnswers(items []atomicItem, res []engine.StartResult) []json.RawMessage {
	out := make([]json.RawMessage, len(res))
	for i, r := range res {
		status := http.StatusOK
		if r.StartedFresh {
			status = http.StatusCreated
		}
		body, _ := json.Marshal(startResponse(r, items[i].req.IdempotencyKey != "", false))
		out[i] = itemAnswer(status, body)
	}
	return out
}
