package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// startBody is the body of POST /workflows/{name}/start.
type startBody struct {
	WorkflowID     string          `json:"workflow_id"`
	Input          json.RawMessage `json:"input"`
	Queue          string          `json:"queue"`
	Memo           json.RawMessage `json:"memo"`
	IdempotencyKey *string         `json:"idempotency_key"`
	ReusePolicy    string          `json:"reuse_policy"`
	ConflictPolicy *string         `json:"conflict_policy"`
	// Deferred-start policies (deferred.go); a key with one is refused.
	Throttle     json.RawMessage `json:"throttle"`
	Debounce     json.RawMessage `json:"debounce"`
	BatchKey     json.RawMessage `json:"batch_key"`
	BatchMaxSize json.RawMessage `json:"batch_max_size"`
	BatchMaxWait json.RawMessage `json:"batch_max_wait"`
	// Delay ("90s" or seconds) or StartAt (RFC 3339) defer the first task.
	Delay               json.RawMessage   `json:"delay"`
	StartAt             *time.Time        `json:"start_at"`
	CompletionCallbacks []engine.Callback `json:"completion_callbacks"`
	// ExecutionTimeout and RunTimeout ("1h" or seconds, like delay)
	// override the workflow's default timeouts; 0 removes one.
	ExecutionTimeout json.RawMessage `json:"execution_timeout"`
	RunTimeout       json.RawMessage `json:"run_timeout"`
	flowFields
}

func (b *startBody) deferred() bool {
	return given(b.Throttle) || given(b.Debounce) || given(b.BatchKey) || given(b.BatchMaxSize) || given(b.BatchMaxWait)
}

// given reports whether a field was sent with a value: null is absent.
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// start handles POST /workflows/{name}/start. A committed keyed replay is
// answered before any check a fresh start runs (see docs/http-api.md).
func (s *Server) start(c *gin.Context) {
	name := c.Param("id")
	if err := checkWorkflowName(c, "workflow name", name); err != nil {
		s.fail(c, err)
		return
	}
	wait, err := parseWait(c.Query("wait"), s.cfg.ResultWaitMax)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Set(startWaitKey, wait)
	headerKey, hasHeader, err := idempotencyKey(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		// Even an oversized body is irrelevant to a committed replay (a
		// replay on another node's shard cannot be probed without the body).
		if hasHeader && s.replayHere(c, name, headerKey) {
			return
		}
		s.fail(c, err)
		return
	}
	var body startBody
	if decodeErr := decodeObject(raw, &body); decodeErr != nil {
		// The body is irrelevant to a replay: a header key still finds
		// its claim, by key routing (the workflow id is unknown).
		if hasHeader {
			s.replayOrFail(c, name, headerKey, raw, decodeErr)
			return
		}
		s.fail(c, decodeErr)
		return
	}
	key := headerKey
	if !hasHeader && body.IdempotencyKey != nil {
		key = *body.IdempotencyKey
		if err := checkKey(c, "idempotency_key", key); err != nil {
			s.fail(c, err)
			return
		}
	}
	if body.deferred() && key == "" {
		s.deferStart(c, name, raw, &body)
		return
	}
	start := func(t Target, pl *engine.Placement) { s.startOn(c, t, pl, name, key, &body) }
	s.routeStart(c, name, body.WorkflowID, key, raw, start)
}

// startOn serves a start on the local shard of t and answers it.
func (s *Server) startOn(c *gin.Context, t Target, pl *engine.Placement, name, key string, body *startBody) {
	out, err := s.serveStart(c, t, pl, name, key, body)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.answerStart(c, t.Shard, out.status, out.res, out.answer)
}

// startOutcome is a start served on a shard: its status and answer.
type startOutcome struct {
	status int
	res    engine.StartResult
	answer *startAnswer
}

// serveStart serves a start on the local shard of t: replay, else fresh.
// A key the shard knows (it claimed it or answered a replay of it) is
// probed first: the read-only fast path of replays. Any other key is
// likely fresh, a placed one included: the start goes straight to the
// shard's batch, which answers a live claim as a replay all the same, and
// only a start that fails (or is refused as moved) probes, so that a
// replay is never refused by a fresh start's checks. c gives the request's context and
// the caller's scopes; nothing is written to it (batch items share it).
func (s *Server) serveStart(c *gin.Context, t Target, pl *engine.Placement, name, key string, body *startBody) (startOutcome, error) {
	probed := false
	// Callback URLs are checked against DNS, which may hang: a start with
	// callbacks is probed first so that its replay never waits on them.
	if key != "" && (len(body.CompletionCallbacks) > 0 || t.Shard.KnownStartKey(name, key)) {
		if out, ok, err := lookupReplay(c, t.Shard, name, key); err != nil || ok {
			return out, err
		}
		probed = true
	}
	out, err := s.freshStart(c, t, pl, name, key, body)
	if err != nil && key != "" && !probed {
		// A failed start is answered by its key's live claim if it has one.
		if replayed, ok, rerr := lookupReplay(c, t.Shard, name, key); rerr != nil || ok {
			return replayed, rerr
		}
	}
	return out, err
}

func (s *Server) freshStart(c *gin.Context, t Target, pl *engine.Placement, name, key string, body *startBody) (startOutcome, error) {
	req, err := s.startRequest(name, key, body)
	if err != nil {
		return startOutcome{}, err
	}
	req.Placement, req.AllowTerminate = pl, mayTerminate(c)
	req.Probed = key != "" // probed above, or probed below if the start fails
	if req.WorkflowID == "" {
		if req.WorkflowID, err = s.router.MintWorkflowID(name, t.ShardID); err != nil {
			return startOutcome{}, err
		}
	}
	res, err := t.Shard.StartWorkflow(c.Request.Context(), req)
	if err != nil {
		return startOutcome{}, err
	}
	status := http.StatusOK
	if res.StartedFresh {
		status = http.StatusCreated
	}
	return startOutcome{status: status, res: res, answer: startResponse(res, key != "", body.ConflictPolicy != nil)}, nil
}

// lookupReplay reads the replay of a key's live claim: ok false if none.
func lookupReplay(c *gin.Context, shard Shard, name, key string) (startOutcome, bool, error) {
	res, ok, err := shard.LookupStartKey(c.Request.Context(), name, key)
	if err != nil || !ok {
		return startOutcome{}, false, err
	}
	return startOutcome{status: http.StatusOK, res: res, answer: startResponse(res, true, false)}, true, nil
}

// replayOrFail handles a start whose body did not decode but carries a
// header key: the key's shard answers the replay, or the decode error.
func (s *Server) replayOrFail(c *gin.Context, name, key string, raw []byte, decodeErr error) {
	failed := func(Target, *engine.Placement) { s.fail(c, decodeErr) } // only claims matter here
	t, err := s.placeReplay(c, name, key, raw, failed)
	if err != nil {
		s.fail(c, err)
		return
	}
	if t == nil {
		return // answered from an earlier epoch's shard
	}
	shard := s.serveOrForward(c, *t, raw)
	if shard == nil {
		return
	}
	if !s.replay(c, shard, name, key) {
		s.fail(c, decodeErr)
	}
}

// placeReplay places a replay-only request (a header key, no usable
// body) by its key: nil when a read-only look at the shards earlier epochs
// placed the key on answered it already.
func (s *Server) placeReplay(c *gin.Context, name, key string, body []byte, run runStart) (*Target, error) {
	if shard, ok := pinnedShard(c); ok {
		t, err := s.router.ForShard(shard)
		return &t, err
	}
	p, err := s.router.Place(name, key)
	if err != nil {
		return nil, err
	}
	if s.checkEarlier(c, name, "", key, p, false, body, run) {
		return nil, nil
	}
	t, err := s.router.ForShard(p.Shard)
	return &t, err
}

// replayHere probes the key on its current shard if this node serves it.
func (s *Server) replayHere(c *gin.Context, name, key string) bool {
	p, err := s.router.Place(name, key)
	if err != nil {
		return false
	}
	t, err := s.router.ForShard(p.Shard)
	if err != nil || t.Shard == nil {
		return false
	}
	return s.replay(c, t.Shard, name, key)
}

// replay answers 200 from a live claim of the key; false if there is none.
func (s *Server) replay(c *gin.Context, shard Shard, name, key string) bool {
	out, ok, err := lookupReplay(c, shard, name, key)
	if err != nil {
		s.fail(c, err)
		return true
	}
	if ok {
		s.answerStart(c, shard, out.status, out.res, out.answer)
	}
	return ok
}

// startWaitKey holds a start's ?wait= on its gin context.
const startWaitKey = "harvest.start_wait"

// answerStart sends a start's answer. A start that asked to wait (?wait=)
// first waits that long for the run to close, and a closed run's answer
// carries its result, as GET /workflows/{id}/result returns it. The start
// itself has happened: a wait that fails or ends first leaves the result
// out, and the client polls for it.
func (s *Server) answerStart(c *gin.Context, shard Shard, status int, res engine.StartResult, out *startAnswer) {
	if wait := c.GetDuration(startWaitKey); wait > 0 {
		x, err := shard.Result(c.Request.Context(), res.ExecutionID, wait)
		switch {
		case err != nil:
			s.log.Debug().Err(err).Str("execution_id", res.ExecutionID.String()).Msg("start wait failed")
		case engine.IsTerminal(x.State):
			out.Result = resultBody(x)
		}
	}
	c.JSON(status, out)
}

func (s *Server) startRequest(name, key string, b *startBody) (engine.StartRequest, error) {
	if b.deferred() {
		// A deferred start without a key went to deferStart.
		return engine.StartRequest{}, badRequest(codeInvalidArgument,
			"an idempotency key cannot be combined with throttle, debounce or batch: those defer the start and return no execution_id")
	}
	if err := checkText("workflow_id", b.WorkflowID, maxIDLen, false); err != nil {
		return engine.StartRequest{}, err
	}
	if err := checkText("queue", b.Queue, maxNameLen, false); err != nil {
		return engine.StartRequest{}, err
	}
	reuse, err := engine.ParseReusePolicy(b.ReusePolicy)
	if err != nil {
		return engine.StartRequest{}, err
	}
	conflict, err := engine.ParseConflictPolicy(deref(b.ConflictPolicy))
	if err != nil {
		return engine.StartRequest{}, err
	}
	delay, err := parseDelay(b.Delay)
	if err != nil {
		return engine.StartRequest{}, err
	}
	execTimeout, err := parseDuration("execution_timeout", b.ExecutionTimeout)
	if err != nil {
		return engine.StartRequest{}, err
	}
	runTimeout, err := parseDuration("run_timeout", b.RunTimeout)
	if err != nil {
		return engine.StartRequest{}, err
	}
	for i, cb := range b.CompletionCallbacks {
		if err := checkText(fmt.Sprintf("completion_callbacks[%d].url", i), cb.URL, maxIDLen, true); err != nil {
			return engine.StartRequest{}, err
		}
	}
	req := engine.StartRequest{
		WorkflowName: name, WorkflowID: b.WorkflowID, Input: b.Input, Queue: b.Queue, Memo: b.Memo,
		IdempotencyKey: key, ReusePolicy: reuse, ConflictPolicy: conflict,
		Delay: delay, StartAt: b.StartAt, Callbacks: b.CompletionCallbacks,
		ExecutionTimeout: execTimeout, RunTimeout: runTimeout,
	}
	if err := b.apply(&req); err != nil {
		return engine.StartRequest{}, err
	}
	return req, nil
}

// parseDelay reads "delay": a Go duration string ("90s") or seconds.
func parseDelay(raw json.RawMessage) (*time.Duration, error) { return parseDuration("delay", raw) }

// parseDuration reads a duration field: a Go duration string ("90s") or
// a number of seconds; nil when absent or null.
func parseDuration(field string, raw json.RawMessage) (*time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		d, err := time.ParseDuration(text)
		if err != nil {
			return nil, badRequest(codeInvalidArgument, fmt.Sprintf("%s %q is not a duration like \"90s\"", field, text))
		}
		return &d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil || math.Abs(secs) > maxDurationSeconds {
		return nil, badRequest(codeInvalidArgument, field+" must be a duration string like \"90s\" or a number of seconds")
	}
	d := time.Duration(secs * float64(time.Second))
	return &d, nil
}

// maxDurationSeconds is the largest duration in seconds a time.Duration
// holds (about 292 years).
const maxDurationSeconds = float64(math.MaxInt64 / int64(time.Second))

// startAnswer is the body of a start's answer. Its fields are in the
// order of their names, as a map would encode them.
type startAnswer struct {
	Deduplicated *bool  `json:"deduplicated,omitempty"`
	ExecutionID  string `json:"execution_id"`
	// LatestExecutionID and LatestState are set in a replay whose run
	// continued as new: the current run of its chain.
	LatestExecutionID string        `json:"latest_execution_id,omitempty"`
	LatestState       string        `json:"latest_state,omitempty"`
	Result            *resultAnswer `json:"result,omitempty"`
	StartedFresh      *bool         `json:"started_fresh,omitempty"`
	State             string        `json:"state"`
	WorkflowID        string        `json:"workflow_id"`
	WorkflowName      string        `json:"workflow_name"`
}

func startResponse(res engine.StartResult, keyed, conflictSent bool) *startAnswer {
	out := &startAnswer{ExecutionID: res.ExecutionID.String(), WorkflowName: res.WorkflowName,
		WorkflowID: res.WorkflowID, State: res.State}
	out.LatestExecutionID, out.LatestState = latestOf(res)
	if keyed || conflictSent {
		out.StartedFresh = &res.StartedFresh
	}
	if keyed {
		out.Deduplicated = &res.Deduplicated
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
