package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// flowFields are the flow control fields of a start's body (of a start
// or a signal-with-start): its key under its workflow's concurrency
// limit, its dispatch priority (1 first … 5 last), its fairness key and
// that key's weight.
type flowFields struct {
	ConcurrencyKey string `json:"concurrency_key"`
	Priority       *int   `json:"priority"`
	FairnessKey    string `json:"fairness_key"`
	FairnessWeight *int   `json:"fairness_weight"`
}

// apply checks the fields and sets them on req.
func (f *flowFields) apply(req *engine.StartRequest) error {
	if err := checkTexts(textParam{"concurrency_key", f.ConcurrencyKey, engine.MaxFlowKeyBytes},
		textParam{"fairness_key", f.FairnessKey, engine.MaxFlowKeyBytes}); err != nil {
		return err
	}
	priority, err := inRange("priority", f.Priority, harvest.PriorityHighest, harvest.PriorityLowest)
	if err != nil {
		return err
	}
	weight, err := inRange("fairness_weight", f.FairnessWeight, 1, harvest.MaxFairnessWeight)
	if err != nil {
		return err
	}
	req.ConcurrencyKey, req.Priority, req.FairnessKey, req.FairnessWeight = f.ConcurrencyKey, priority, f.FairnessKey, weight
	return nil
}

// inRange is *v when it is in lo…hi, 0 when absent; else a 400.
func inRange(name string, v *int, lo, hi int) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < lo || *v > hi {
		return 0, badRequest(codeInvalidArgument, fmt.Sprintf("%s %d is out of range: %d to %d", name, *v, lo, hi))
	}
	return *v, nil
}

// flowReader is what GET /flow needs of a shard served here.
type flowReader interface {
	FlowStatus(ctx context.Context) (engine.FlowStatus, error)
}

var _ flowReader = (*engine.Engine)(nil)

// flowResponse is the answer of GET /flow: the limits in force and, per
// shard, the concurrency keys in use.
type flowResponse struct {
	Limits []engine.FlowLimit `json:"limits"`
	Keys   []shardFlowKey     `json:"keys"`
	// ActivityLimits and Activities are the same for activities.
	ActivityLimits []engine.ActivityFlowLimit `json:"activity_limits"`
	Activities     []shardActivityKey         `json:"activities"`
	// Status is "partial" when some shards could not be read.
	Status            string   `json:"status,omitempty"`
	UnavailableShards []uint16 `json:"unavailable_shards,omitempty"`
}

// shardFlowKey is one concurrency key of one shard.
type shardFlowKey struct {
	Shard uint16 `json:"shard"`
	engine.Occupancy
}

// shardActivityKey is one activity concurrency key of one shard.
type shardActivityKey struct {
	Shard uint16 `json:"shard"`
	engine.ActivityOccupancy
}

// flow handles GET /flow: every shard's flow status, merged. Limits are
// counted per shard, so a key may show once per shard that holds its runs.
func (s *Server) flow(c *gin.Context) {
	shards, err := s.queryShards(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	sts, errs := eachShard(shards, func(shard uint16) (engine.FlowStatus, error) { return s.flowOf(c, shard) })
	out := flowResponse{Limits: []engine.FlowLimit{}, Keys: []shardFlowKey{}, ActivityLimits: []engine.ActivityFlowLimit{},
		Activities: []shardActivityKey{}}
	for i, err := range errs {
		if err != nil && len(shards) == 1 {
			s.fail(c, err)
			return
		}
		out.add(shards[i], sts[i], err)
	}
	c.JSON(http.StatusOK, out)
}

// add merges one shard's status (or its failure) into out.
func (out *flowResponse) add(shard uint16, st engine.FlowStatus, err error) {
	if err != nil {
		out.Status = "partial"
		out.UnavailableShards = append(out.UnavailableShards, shard)
		return
	}
	if len(out.Limits) == 0 {
		out.Limits = append(out.Limits, st.Limits...)
	}
	if len(out.ActivityLimits) == 0 {
		out.ActivityLimits = append(out.ActivityLimits, st.ActivityLimits...)
	}
	for _, k := range st.Keys {
		out.Keys = append(out.Keys, shardFlowKey{Shard: shard, Occupancy: k})
	}
	for _, k := range st.Activities {
		out.Activities = append(out.Activities, shardActivityKey{Shard: shard, ActivityOccupancy: k})
	}
}

// flowOf reads one shard's flow status, here or from its owner.
func (s *Server) flowOf(c *gin.Context, shard uint16) (engine.FlowStatus, error) {
	t, err := s.router.ForShard(shard)
	if err != nil {
		return engine.FlowStatus{}, err
	}
	if r, ok := t.Shard.(flowReader); ok {
		return r.FlowStatus(c.Request.Context())
	}
	if c.GetHeader(ForwardedHeader) != "" || t.URL == "" {
		return engine.FlowStatus{}, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: fmt.Sprintf("shard %d is not served here; owner %q", shard, t.Owner)}
	}
	var remote flowResponse
	if err := s.readShard(c, t, "/flow", "flow", &remote); err != nil {
		return engine.FlowStatus{}, err
	}
	st := engine.FlowStatus{Limits: remote.Limits, ActivityLimits: remote.ActivityLimits}
	for _, k := range remote.Keys {
		st.Keys = append(st.Keys, k.Occupancy)
	}
	for _, k := range remote.Activities {
		st.Activities = append(st.Activities, k.ActivityOccupancy)
	}
	return st, nil
}
