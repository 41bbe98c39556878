package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// probeResult is what one shard knows about a routing key.
type probeResult struct {
	ShardID uint16             `json:"shard_id"`
	Claim   *probeClaim        `json:"claim,omitempty"`
	Holder  *engine.SlotHolder `json:"holder,omitempty"`
}

type probeClaim struct {
	ExecutionID  string `json:"execution_id"`
	WorkflowName string `json:"workflow_name"`
	WorkflowID   string `json:"workflow_id"`
	State        string `json:"state"`
}

// probeEarlier looks for a live claim of key and the holder of workflowID
// on the shards earlier placement epochs (inside the window) routed this
// request to. It answers the request itself and returns true when it found
// something: a claim is the 200 replay; a holder gets the request routed to
// its shard, where the reuse policy is decided atomically. An unreachable
// shard fails closed (503): a prior run may be there.
func (s *Server) probeEarlier(c *gin.Context, name, workflowID, key string, body []byte, handle func(Target)) bool {
	if _, pinned := pinnedShard(c); pinned {
		return false
	}
	routing := workflowID
	if routing == "" {
		routing = key
	}
	if routing == "" {
		return false
	}
	shards := s.router.Probes(name, routing)
	if len(shards) == 0 {
		return false
	}
	results := make([]probeResult, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Go(func() { results[i], errs[i] = s.probeShard(c, shard, name, workflowID, key) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			abort(c, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
				msg: fmt.Sprintf("shard %d, where this key or workflow id was placed earlier, cannot be checked: %v", shards[i], err)})
			return true
		}
	}
	for _, r := range results {
		if key != "" && r.Claim != nil {
			c.JSON(http.StatusOK, gin.H{"execution_id": r.Claim.ExecutionID, "workflow_name": name,
				"workflow_id": r.Claim.WorkflowID, "state": r.Claim.State, "started_fresh": false, "deduplicated": true})
			return true
		}
	}
	for _, r := range results {
		if r.Holder != nil {
			t, err := s.router.ForShard(r.ShardID)
			if err != nil {
				s.fail(c, err)
				return true
			}
			if t.Shard == nil {
				s.forward(c, t, body)
				return true
			}
			handle(t)
			return true
		}
	}
	return false
}

// probeShard asks shard (here or through its owner) about the key and id.
func (s *Server) probeShard(c *gin.Context, shard uint16, name, workflowID, key string) (probeResult, error) {
	t, err := s.router.ForShard(shard)
	if err != nil {
		return probeResult{}, err
	}
	if t.Shard != nil {
		return probeLocal(c.Request.Context(), t.Shard, shard, name, workflowID, key)
	}
	if t.URL == "" {
		return probeResult{}, fmt.Errorf("no owner known for shard %d", shard)
	}
	q := url.Values{"workflow_name": {name}, "workflow_id": {workflowID}, "idempotency_key": {key}}
	u := fmt.Sprintf("%s%s/internal/shards/%d/probe?%s", t.URL, BasePath, shard, q.Encode())
	req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodGet, u, nil)
	if err != nil {
		return probeResult{}, err
	}
	req.Header.Set(ForwardedHeader, s.cfg.NodeID)
	if auth := c.GetHeader("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return probeResult{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return probeResult{}, err
	}
	if res.StatusCode != http.StatusOK {
		return probeResult{}, fmt.Errorf("probe shard %d: HTTP %d: %s", shard, res.StatusCode, raw)
	}
	var r probeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return probeResult{}, fmt.Errorf("decode probe of shard %d: %w", shard, err)
	}
	return r, nil
}

func probeLocal(ctx context.Context, sh Shard, shard uint16, name, workflowID, key string) (probeResult, error) {
	r := probeResult{ShardID: shard}
	if key != "" {
		res, ok, err := sh.LookupStartKey(ctx, name, key)
		if err != nil {
			return r, err
		}
		if ok {
			r.Claim = &probeClaim{ExecutionID: res.ExecutionID.String(), WorkflowName: name, WorkflowID: res.WorkflowID, State: res.State}
		}
	}
	if workflowID != "" {
		h, ok, err := sh.LookupWorkflowID(ctx, name, workflowID)
		if err != nil {
			return r, err
		}
		if ok {
			r.Holder = &h
		}
	}
	return r, nil
}

// internalProbe handles GET /internal/shards/{shard}/probe (node to node).
func (s *Server) internalProbe(c *gin.Context) {
	n, err := strconv.ParseUint(c.Param("shard"), 10, 16)
	if err != nil {
		s.fail(c, badRequest(codeInvalidArgument, "shard must be an integer"))
		return
	}
	t, err := s.router.ForShard(uint16(n))
	if err != nil {
		s.fail(c, err)
		return
	}
	sh := s.serveOrForward(c, t, nil)
	if sh == nil {
		return
	}
	r, err := probeLocal(c.Request.Context(), sh, uint16(n), c.Query("workflow_name"), c.Query("workflow_id"), c.Query("idempotency_key"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}
