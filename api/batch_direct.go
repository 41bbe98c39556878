package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// The direct path of batch items.
//
// Most items of a batch are served on a shard of this node, under the
// current placement alone. Such an item runs the start route's own steps
// (the same checks, in the same order, then serveStart) without a request
// of its own: no gin context, recorder, body re-encoding or second decode,
// which were a third of the route's cost per item. Any other item (its
// shard is another node's, or an earlier placement epoch may hold its key)
// is served by emulating the start route (batchOne), which forwards it or
// looks at the earlier shards as a single start would.

// itemStarted is a started item's answer: its status and the start's.
type itemStarted struct {
	Status int `json:"status"`
	*startAnswer
}

// batchDirect serves item on this node if it can (see above); ok false
// leaves it to the emulated route.
func (s *Server) batchDirect(c *gin.Context, item *batchItem, size int) (answer json.RawMessage, ok bool) {
	key, err := s.directChecks(c, item, size)
	if err != nil {
		return itemFailed(s.classify(c, err)), true
	}
	t, pl, ok, err := s.directTarget(item.WorkflowName, item.WorkflowID, key)
	switch {
	case err != nil:
		return itemFailed(s.classify(c, err)), true
	case !ok:
		return nil, false
	}
	body := &startBody{WorkflowID: item.WorkflowID, Input: item.Input, IdempotencyKey: item.IdempotencyKey}
	out, err := s.serveStart(c, t, pl, item.WorkflowName, key, body)
	if err != nil {
		return itemFailed(s.classify(c, err)), true
	}
	raw, err := json.Marshal(itemStarted{Status: out.status, startAnswer: out.answer})
	if err != nil {
		return itemFailed(s.classify(c, err)), true
	}
	return raw, true
}

// directChecks runs the checks the start route runs before it places a
// start, and returns the item's key. An item's JSON (size bytes) is
// limited as a single start's body is.
func (s *Server) directChecks(c *gin.Context, item *batchItem, size int) (string, error) {
	if int64(size) > s.cfg.MaxBodyBytes {
		return "", &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: fmt.Sprintf("an item exceeds %d bytes, a single start's body limit", s.cfg.MaxBodyBytes)}
	}
	if err := checkWorkflowName(c, "workflow name", item.WorkflowName); err != nil {
		return "", err
	}
	if item.IdempotencyKey == nil {
		return "", nil
	}
	return *item.IdempotencyKey, checkKey(c, "idempotency_key", *item.IdempotencyKey)
}

// directTarget places a start as routeStart would; ok is false when its
// shard is not served here or earlier epochs must be looked at first.
func (s *Server) directTarget(name, workflowID, key string) (Target, *engine.Placement, bool, error) {
	routing := cmp.Or(workflowID, key)
	if routing == "" {
		t, err := s.router.ForStart(name, "", "")
		return t, nil, err == nil && t.Shard != nil, err
	}
	p, err := s.router.Place(name, routing)
	if err != nil {
		return Target{}, nil, false, err
	}
	if len(p.Earlier) > 0 && p.Epoch > 0 {
		return Target{}, nil, false, nil
	}
	t, err := s.router.ForShard(p.Shard)
	if err != nil || t.Shard == nil {
		return t, nil, false, err
	}
	var pl *engine.Placement
	if p.Epoch > 0 {
		pl = &engine.Placement{Epoch: p.Epoch, RoutingKey: routing}
	}
	return t, pl, true, nil
}

// itemFailed is a failed item's answer: its status, error and code.
func itemFailed(e *apiError) json.RawMessage {
	return itemAnswer(e.status, errorBody(e))
}
