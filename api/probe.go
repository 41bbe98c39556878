package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/engine"
)

// EpochHeader carries the placement epoch a forwarded start was placed
// under: the owner checks the key's placement against that epoch, not
// its own catalog's.
const EpochHeader = "X-Harvest-Epoch"

// epochKey is the gin context key of the placement epoch forward sends.
const epochKey = "harvest.placement_epoch"

// runStart serves a start on the local shard of t, placed under pl (nil:
// no placement check).
type runStart func(t Target, pl *engine.Placement)

// probeResult is what one shard knows about a routing key.
type probeResult struct {
	ShardID uint16             `json:"shard_id"`
	Claim   *probeClaim        `json:"claim,omitempty"`
	Holder  *engine.SlotHolder `json:"holder,omitempty"`
	Moved   *movedTo           `json:"moved,omitempty"`
}

type probeClaim struct {
	ExecutionID  string `json:"execution_id"`
	WorkflowName string `json:"workflow_name"`
	WorkflowID   string `json:"workflow_id"`
	State        string `json:"state"`
	// LatestExecutionID and LatestState: the chain's current run, when
	// the claim's run continued as new.
	LatestExecutionID string `json:"latest_execution_id,omitempty"`
	LatestState       string `json:"latest_state,omitempty"`
}

type movedTo struct {
	ShardID uint16 `json:"shard_id"`
	Epoch   uint64 `json:"epoch"`
}

// routeStart places a start that may create a run and runs it where it
// belongs: a forwarded start on the shard it names, an unrouted one on
// any writable shard, a routed one (workflow id, else key) on the shard
// the current placement epoch picks — after claiming the key on every
// shard earlier epochs inside the window placed it on (see claimEarlier).
func (s *Server) routeStart(c *gin.Context, name, workflowID, key string, body []byte, run runStart) {
	routing := cmp.Or(workflowID, key)
	if shard, ok := pinnedShard(c); ok {
		t, err := s.router.ForShard(shard)
		if err != nil {
			s.fail(c, err)
			return
		}
		if s.serveOrForward(c, t, body) != nil {
			run(t, forwardedPlacement(c, routing))
		}
		return
	}
	if routing == "" {
		t, err := s.router.ForStart(name, "", "")
		if err != nil {
			s.fail(c, err)
			return
		}
		if s.serveOrForward(c, t, body) != nil {
			run(t, nil)
		}
		return
	}
	p, err := s.router.Place(name, routing)
	if err != nil {
		s.fail(c, err)
		return
	}
	if s.checkEarlier(c, name, workflowID, key, p, true, body, run) {
		return
	}
	t, err := s.router.ForShard(p.Shard)
	if err != nil {
		s.fail(c, err)
		return
	}
	var pl *engine.Placement
	if p.Epoch > 0 {
		pl = &engine.Placement{Epoch: p.Epoch, RoutingKey: routing}
		c.Set(epochKey, p.Epoch)
	}
	if s.serveOrForward(c, t, body) != nil {
		run(t, pl)
	}
}

// forwardedPlacement is the placement a forwarding node sent along.
func forwardedPlacement(c *gin.Context, routing string) *engine.Placement {
	// Epochs are stored as bigint: one over its range is no epoch.
	epoch, err := strconv.ParseInt(c.GetHeader(EpochHeader), 10, 64)
	if err != nil || epoch <= 0 || routing == "" {
		return nil
	}
	return &engine.Placement{Epoch: uint64(epoch), RoutingKey: routing}
}

// checkEarlier looks for the key's live claim and the workflow id's
// holder on the shards earlier placement epochs put the routing key on.
// With claim set (a start that may create a run) each of those shards
// also records that the key now belongs to p.Shard, so that a concurrent
// start placed there by an older catalog is refused instead of creating a
// second run; without it the look-up is read-only (a replay). It answers
// the request itself and returns true when it found something: a claim is
// the 200 replay; a holder gets the request run on its shard, where the
// reuse policy is decided atomically; a newer epoch's claim is a 503 (this
// node's catalog is behind: retry). An unreachable shard fails closed
// (503): a prior run may be there.
func (s *Server) checkEarlier(c *gin.Context, name, workflowID, key string, p Placement, claim bool, body []byte, run runStart) bool {
	if len(p.Earlier) == 0 || p.Epoch == 0 {
		return false
	}
	req := engine.ClaimRequest{WorkflowName: name, WorkflowID: workflowID, IdempotencyKey: key, Epoch: p.Epoch, Target: p.Shard}
	results := make([]probeResult, len(p.Earlier))
	errs := make([]error, len(p.Earlier))
	var wg sync.WaitGroup
	for i, shard := range p.Earlier {
		wg.Go(func() { results[i], errs[i] = s.askShard(c, shard, req, claim) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			abort(c, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
				msg: fmt.Sprintf("shard %d, where this key or workflow id was placed earlier, cannot be checked: %v", p.Earlier[i], err)})
			return true
		}
	}
	for _, r := range results {
		if key != "" && r.Claim != nil {
			fresh, dedup := false, true
			c.JSON(http.StatusOK, &startAnswer{Deduplicated: &dedup, ExecutionID: r.Claim.ExecutionID,
				LatestExecutionID: r.Claim.LatestExecutionID, LatestState: r.Claim.LatestState,
				StartedFresh: &fresh, State: r.Claim.State, WorkflowID: r.Claim.WorkflowID, WorkflowName: name})
			return true
		}
	}
	for _, r := range results {
		if r.Holder != nil {
			s.runOnShard(c, r.ShardID, body, run)
			return true
		}
	}
	for _, r := range results {
		if r.Moved != nil {
			s.fail(c, &engine.MovedError{Shard: r.Moved.ShardID, Epoch: r.Moved.Epoch})
			return true
		}
	}
	return false
}

// runOnShard runs the request on shard, here or at its owner, with no
// placement check: the shard holds the workflow id.
func (s *Server) runOnShard(c *gin.Context, shard uint16, body []byte, run runStart) {
	t, err := s.router.ForShard(shard)
	if err != nil {
		s.fail(c, err)
		return
	}
	if s.serveOrForward(c, t, body) != nil {
		run(t, nil)
	}
}

// askShard claims (or, read-only, probes) the key on shard, here or
// through its owner.
func (s *Server) askShard(c *gin.Context, shard uint16, req engine.ClaimRequest, claim bool) (probeResult, error) {
	ctx := c.Request.Context()
	if !claim {
		return s.probeShard(ctx, identity(c), shard, req.WorkflowName, req.WorkflowID, req.IdempotencyKey)
	}
	t, err := s.router.ForShard(shard)
	if err != nil {
		return probeResult{}, err
	}
	if t.Shard != nil {
		return claimLocal(ctx, t.Shard, shard, req)
	}
	if t.URL == "" {
		return probeResult{}, fmt.Errorf("no owner known for shard %d", shard)
	}
	raw, err := json.Marshal(claimBody(req))
	if err != nil {
		return probeResult{}, err
	}
	u := fmt.Sprintf("%s%s/internal/shards/%d/claim", t.URL, BasePath, shard)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(raw))
	if err != nil {
		return probeResult{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	return s.askRemote(hreq, NodeSig{To: t.Owner, Identity: identity(c), Body: raw}, shard)
}

// probeShard looks up, read only, the key's claim and the workflow id's
// holder on shard: here, or at its owner over the signed node-to-node
// probe route, acting for id.
func (s *Server) probeShard(ctx context.Context, id auth.Identity, shard uint16, name, workflowID, key string) (probeResult, error) {
	t, err := s.router.ForShard(shard)
	if err != nil {
		return probeResult{}, err
	}
	if t.Shard != nil {
		return probeLocal(ctx, t.Shard, shard, name, workflowID, key)
	}
	if t.URL == "" {
		return probeResult{}, fmt.Errorf("no owner known for shard %d", shard)
	}
	q := url.Values{"workflow_name": {name}, "workflow_id": {workflowID}, "idempotency_key": {key}}
	u := fmt.Sprintf("%s%s/internal/shards/%d/probe?%s", t.URL, BasePath, shard, q.Encode())
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return probeResult{}, err
	}
	return s.askRemote(hreq, NodeSig{To: t.Owner, Identity: id}, shard)
}

// askRemote sends req, signed with sig (To, Identity and Body set), to
// the owner of shard and reads its answer.
func (s *Server) askRemote(req *http.Request, sig NodeSig, shard uint16) (probeResult, error) {
	s.signNode(req, sig)
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
		return probeResult{}, fmt.Errorf("ask shard %d: HTTP %d: %s", shard, res.StatusCode, raw)
	}
	var r probeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return probeResult{}, fmt.Errorf("decode answer of shard %d: %w", shard, err)
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
			r.Claim = claimOf(res)
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

func claimLocal(ctx context.Context, sh Shard, shard uint16, req engine.ClaimRequest) (probeResult, error) {
	got, err := sh.ClaimPlacement(ctx, req)
	if err != nil {
		return probeResult{ShardID: shard}, err
	}
	r := probeResult{ShardID: shard, Holder: got.Holder}
	if got.Claim != nil {
		r.Claim = claimOf(*got.Claim)
	}
	if got.Moved != nil {
		r.Moved = &movedTo{ShardID: got.Moved.Shard, Epoch: got.Moved.Epoch}
	}
	return r, nil
}

func claimOf(res engine.StartResult) *probeClaim {
	c := &probeClaim{ExecutionID: res.ExecutionID.String(), WorkflowName: res.WorkflowName, WorkflowID: res.WorkflowID, State: res.State}
	c.LatestExecutionID, c.LatestState = latestOf(res)
	return c
}

// latestOf is a replay's chain's current run and its state ("" unless
// the run continued as new).
func latestOf(res engine.StartResult) (id, state string) {
	if res.LatestExecutionID == uuid.Nil {
		return "", ""
	}
	return res.LatestExecutionID.String(), res.LatestState
}

// internalClaimBody is the body of POST /internal/shards/{shard}/claim.
type internalClaimBody struct {
	WorkflowName   string `json:"workflow_name"`
	WorkflowID     string `json:"workflow_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Epoch          uint64 `json:"epoch"`
	Target         uint16 `json:"target_shard"`
}

func claimBody(r engine.ClaimRequest) internalClaimBody {
	return internalClaimBody{WorkflowName: r.WorkflowName, WorkflowID: r.WorkflowID, IdempotencyKey: r.IdempotencyKey,
		Epoch: r.Epoch, Target: r.Target}
}

// internalProbe handles GET /internal/shards/{shard}/probe (node to node).
func (s *Server) internalProbe(c *gin.Context) {
	shard, sh := s.internalShard(c)
	if sh == nil {
		return
	}
	name, id, key := c.Query("workflow_name"), c.Query("workflow_id"), c.Query("idempotency_key")
	if err := checkRoutingKey(name, id, key); err != nil {
		s.fail(c, err)
		return
	}
	r, err := probeLocal(c.Request.Context(), sh, shard, name, id, key)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

// internalClaim handles POST /internal/shards/{shard}/claim (node to node).
func (s *Server) internalClaim(c *gin.Context) {
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var b internalClaimBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	if err := b.check(); err != nil {
		s.fail(c, err)
		return
	}
	shard, sh := s.internalShard(c)
	if sh == nil {
		return
	}
	r, err := claimLocal(c.Request.Context(), sh, shard, engine.ClaimRequest{WorkflowName: b.WorkflowName,
		WorkflowID: b.WorkflowID, IdempotencyKey: b.IdempotencyKey, Epoch: b.Epoch, Target: b.Target})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

// checkRoutingKey checks the identifiers of an internal probe or claim.
func checkRoutingKey(name, workflowID, key string) error {
	return checkTexts(textParam{"workflow_name", name, maxNameLen}, textParam{"workflow_id", workflowID, maxIDLen},
		textParam{"idempotency_key", key, maxKeyLen})
}

// check refuses a claim PostgreSQL could not store: bad identifiers and
// an epoch over bigint's range.
func (b internalClaimBody) check() error {
	if b.Epoch > math.MaxInt64 {
		return badRequest(codeInvalidArgument, fmt.Sprintf("epoch %d is over %d", b.Epoch, int64(math.MaxInt64)))
	}
	return checkRoutingKey(b.WorkflowName, b.WorkflowID, b.IdempotencyKey)
}

// internalShard is the shard an internal route names, if served here
// (else the answer has been written).
func (s *Server) internalShard(c *gin.Context) (uint16, Shard) {
	n, err := strconv.ParseUint(c.Param("shard"), 10, 16)
	if err != nil {
		s.fail(c, badRequest(codeInvalidArgument, "shard must be an integer"))
		return 0, nil
	}
	t, err := s.router.ForShard(uint16(n))
	if err != nil {
		s.fail(c, err)
		return 0, nil
	}
	return uint16(n), s.serveOrForward(c, t, nil)
}
