package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// Deferred starts (engine/internal/deferred, docs/http-api.md): a start with a
// throttle, debounce or batch policy is recorded on the shard its policy
// key places on, as the ring places (workflow_name, key), and answered
// 202 with its deferred id; the shard's owner fires it later with the
// keyed start hv:deferred:<id>.

// deferrer is what a shard served here offers for deferred starts (an
// *engine.Engine).
type deferrer interface {
	Defer(ctx context.Context, req engine.DeferRequest) (engine.Deferred, error)
	GetDeferred(ctx context.Context, id uuid.UUID) (engine.Deferred, error)
	ListDeferred(ctx context.Context) ([]engine.Deferred, error)
}

func (s *Server) deferredRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/deferred/:deferred", needRead, s.describeDeferred)
	s.handle(g, http.MethodGet, "/admin/deferred", needAdmin, s.listDeferred)
}

const codeThrottled = "throttled"

// throttleBody and debounceBody are the policies' objects in a start's
// body; durations are Go duration strings ("90s") or seconds.
type throttleBody struct {
	Key        string          `json:"key"`
	Rate       int             `json:"rate"`
	Per        json.RawMessage `json:"per"`
	MaxBacklog int             `json:"max_backlog"`
}

type debounceBody struct {
	Key     string          `json:"key"`
	Window  json.RawMessage `json:"window"`
	MaxWait json.RawMessage `json:"max_wait"`
}

// deferRequest reads a start body's policy into a deferred start; the
// options of an immediate start do not combine with one.
func deferRequest(name string, b *startBody) (engine.DeferRequest, error) {
	if err := checkText("workflow_id", b.WorkflowID, maxIDLen, false); err != nil {
		return engine.DeferRequest{}, err
	}
	if b.Queue != "" || len(b.Memo) > 0 || b.ReusePolicy != "" || b.ConflictPolicy != nil || len(b.Delay) > 0 ||
		b.StartAt != nil || len(b.CompletionCallbacks) > 0 || len(b.ExecutionTimeout) > 0 || len(b.RunTimeout) > 0 {
		return engine.DeferRequest{}, badRequest(codeInvalidArgument,
			"a throttle, debounce or batch start takes workflow_id and input only (no queue, memo, policies, delay, start_at, callbacks or timeouts)")
	}
	req := engine.DeferRequest{WorkflowName: name, WorkflowID: b.WorkflowID, Input: b.Input}
	var err error
	if given(b.Throttle) {
		req.Throttle, err = throttlePolicy(b.Throttle)
	}
	if err == nil && given(b.Debounce) {
		req.Debounce, err = debouncePolicy(b.Debounce)
	}
	if err == nil && (given(b.BatchKey) || given(b.BatchMaxSize) || given(b.BatchMaxWait)) {
		req.Batch, err = batchPolicy(b)
	}
	return req, err
}

// policyShape is the 400 of a policy object that did not decode: what it
// must be, and what was wrong with it.
func policyShape(want string, err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		want += " (" + ae.msg + ")"
	}
	return badRequest(codeInvalidArgument, want)
}

func throttlePolicy(raw json.RawMessage) (*engine.Throttle, error) {
	var t throttleBody
	if err := decodeObject(raw, &t); err != nil {
		return nil, policyShape("throttle must be an object {key, rate, per, max_backlog}", err)
	}
	per, err := parseDuration("throttle.per", t.Per)
	if err != nil {
		return nil, err
	}
	return &engine.Throttle{Key: t.Key, Rate: t.Rate, Per: deref(per), MaxBacklog: t.MaxBacklog}, nil
}

func debouncePolicy(raw json.RawMessage) (*engine.Debounce, error) {
	var d debounceBody
	if err := decodeObject(raw, &d); err != nil {
		return nil, policyShape("debounce must be an object {key, window, max_wait}", err)
	}
	window, err := parseDuration("debounce.window", d.Window)
	if err != nil {
		return nil, err
	}
	maxWait, err := parseDuration("debounce.max_wait", d.MaxWait)
	if err != nil {
		return nil, err
	}
	return &engine.Debounce{Key: d.Key, Window: deref(window), MaxWait: deref(maxWait)}, nil
}

func batchPolicy(b *startBody) (*engine.Batch, error) {
	var (
		key  string
		size int
	)
	if b.BatchKey != nil && json.Unmarshal(b.BatchKey, &key) != nil {
		return nil, badRequest(codeInvalidArgument, "batch_key must be a string")
	}
	if b.BatchMaxSize != nil && json.Unmarshal(b.BatchMaxSize, &size) != nil {
		return nil, badRequest(codeInvalidArgument, "batch_max_size must be an integer")
	}
	wait, err := parseDuration("batch_max_wait", b.BatchMaxWait)
	if err != nil {
		return nil, err
	}
	return &engine.Batch{Key: key, MaxSize: size, MaxWait: deref(wait)}, nil
}

// policyKey is the key a deferred start is placed by.
func policyKey(req engine.DeferRequest) string {
	switch {
	case req.Throttle != nil:
		return req.Throttle.Key
	case req.Debounce != nil:
		return req.Debounce.Key
	case req.Batch != nil:
		return req.Batch.Key
	}
	return ""
}

// deferStart serves a start with a policy: on the shard of its policy
// key, 202 with the item it joined or opened.
func (s *Server) deferStart(c *gin.Context, name string, raw []byte, b *startBody) {
	if c.GetDuration(startWaitKey) > 0 {
		s.fail(c, badRequest(codeInvalidArgument, "a throttle, debounce or batch start cannot ?wait=: it has no run yet"))
		return
	}
	req, err := deferRequest(name, b)
	if err != nil {
		s.fail(c, err)
		return
	}
	key := policyKey(req)
	if err := checkText("policy key", key, maxIDLen, true); err != nil {
		s.fail(c, err)
		return
	}
	var t Target
	if shard, ok := pinnedShard(c); ok {
		t, err = s.router.ForShard(shard)
	} else {
		t, err = s.router.ForStart(name, "", key)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	d := s.deferShard(c, t, raw)
	if d == nil {
		return
	}
	item, err := d.Defer(c.Request.Context(), req)
	var throttled *engine.ThrottledError
	if errors.As(err, &throttled) {
		secs := retryAfterSeconds(throttled.RetryAfter)
		c.Header("Retry-After", strconv.Itoa(secs))
		abort(c, &apiError{status: http.StatusTooManyRequests, code: codeThrottled, msg: throttled.Error(),
			extra: gin.H{"throttle_key": throttled.Key, "backlog": throttled.Backlog, "retry_after_seconds": secs}})
		return
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, item)
}

// deferShard serves t here or forwards the request (nil: answered).
func (s *Server) deferShard(c *gin.Context, t Target, raw []byte) deferrer {
	shard := s.serveOrForward(c, t, raw)
	if shard == nil {
		return nil
	}
	d, ok := shard.(deferrer)
	if !ok {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "this node's shards keep no deferred starts"})
		return nil
	}
	return d
}

// describeDeferred handles GET /deferred/{id}: the item, pending or
// firing, or started with its execution id, or failed with the reason.
func (s *Server) describeDeferred(c *gin.Context) {
	id, err := uuid.Parse(c.Param("deferred"))
	if err != nil {
		s.fail(c, badRequest(codeInvalidArgument, fmt.Sprintf("deferred id %q is not a UUID", c.Param("deferred"))))
		return
	}
	t, err := s.router.ForShard(engine.ShardOf(id))
	if err != nil {
		s.fail(c, err)
		return
	}
	d := s.deferShard(c, t, nil)
	if d == nil {
		return
	}
	item, err := d.GetDeferred(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, item)
}

// deferredList is the answer of GET /admin/deferred.
type deferredList struct {
	Deferred          []engine.Deferred `json:"deferred"`
	Status            string            `json:"status,omitempty"`
	UnavailableShards []uint16          `json:"unavailable_shards,omitempty"`
}

// listDeferred handles GET /admin/deferred: the pending items of every
// shard (the internal ?shard=N restricts it to one, between nodes).
func (s *Server) listDeferred(c *gin.Context) {
	shards := s.router.Shards()
	if v, ok := c.GetQuery("shard"); ok {
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil || !slices.Contains(shards, uint16(n)) {
			s.fail(c, badRequest(codeInvalidArgument, fmt.Sprintf("shard %q is not a shard of the catalog", v)))
			return
		}
		shards = []uint16{uint16(n)}
	}
	lists := make([][]engine.Deferred, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Go(func() { lists[i], errs[i] = s.listDeferredOn(c, shard) })
	}
	wg.Wait()
	out := deferredList{Deferred: []engine.Deferred{}}
	for i, err := range errs {
		if err != nil && len(shards) == 1 {
			s.fail(c, err)
			return
		}
		if err != nil {
			out.Status = "partial"
			out.UnavailableShards = append(out.UnavailableShards, shards[i])
			continue
		}
		out.Deferred = append(out.Deferred, lists[i]...)
	}
	slices.SortFunc(out.Deferred, func(a, b engine.Deferred) int { return a.FireAt.Compare(b.FireAt) })
	c.JSON(http.StatusOK, out)
}

func (s *Server) listDeferredOn(c *gin.Context, shard uint16) ([]engine.Deferred, error) {
	t, err := s.router.ForShard(shard)
	if err != nil {
		return nil, err
	}
	if t.Shard != nil {
		d, ok := t.Shard.(deferrer)
		if !ok {
			return nil, nil
		}
		return d.ListDeferred(c.Request.Context())
	}
	if c.GetHeader(ForwardedHeader) != "" || t.URL == "" {
		return nil, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: fmt.Sprintf("shard %d is not served here; owner %q", shard, t.Owner)}
	}
	return s.remoteDeferred(c, t)
}

func (s *Server) remoteDeferred(c *gin.Context, t Target) ([]engine.Deferred, error) {
	u := t.URL + BasePath + "/admin/deferred?shard=" + strconv.Itoa(int(t.ShardID))
	req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	s.signNode(req, NodeSig{To: t.Owner, Identity: identity(c)})
	res, err := s.client.Do(req)
	if err != nil {
		return nil, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: "list deferred: " + err.Error()}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, &apiError{status: res.StatusCode, code: codeUnavailable, msg: fmt.Sprintf("list deferred of shard %d: HTTP %d", t.ShardID, res.StatusCode)}
	}
	var out deferredList
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode shard %d deferred: %w", t.ShardID, err)
	}
	return out.Deferred, nil
}
