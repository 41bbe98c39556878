package intake

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// MaxFlowKeyBytes bounds a concurrency or fairness key.
const MaxFlowKeyBytes = 256

// resolveFlow checks the start's priority and keys and, when its workflow
// is under a concurrency limit, sets req.flow: the run takes a free slot
// in its start, or is created QUEUED and waits for the dispatcher to give
// it one (flow_slots.go).
func (in *Intake) resolveFlow(req *StartRequest) error {
	if err := checkFlowFields(req); err != nil {
		return err
	}
	lim := in.limit(req.WorkflowName)
	if !lim.Limited() {
		return nil
	}
	key, err := flowKey(lim, req)
	if err != nil {
		return err
	}
	req.flow = &store.Flow{Name: req.WorkflowName, Key: key, Priority: int16(cmp.Or(req.Priority, harvest.PriorityDefault)),
		Fairness: req.FairnessKey, Weight: int16(cmp.Or(req.FairnessWeight, 1))}
	req.flowMax = int64(lim.MaxRunning)
	if lim.Cluster() {
		req.flowMax = 0 // its run always waits QUEUED, for its key's keeper's grant
	}
	return nil
}

// limit is the concurrency limit of workflow name.
func (in *Intake) limit(name string) harvest.ConcurrencyLimit {
	if in.d.Limit != nil {
		return in.d.Limit(name)
	}
	return in.d.Reg.WorkflowConcurrency(name)
}

// checkFlowFields refuses a priority out of 1…5 and keys that are too
// long or not valid UTF-8 without NUL.
func checkFlowFields(req *StartRequest) error {
	if req.Priority != 0 && (req.Priority < harvest.PriorityHighest || req.Priority > harvest.PriorityLowest) {
		return fmt.Errorf("priority %d is out of range (%d first … %d last): %w",
			req.Priority, harvest.PriorityHighest, harvest.PriorityLowest, shardapi.ErrInvalidArgument)
	}
	if req.FairnessWeight < 0 || req.FairnessWeight > harvest.MaxFairnessWeight {
		return fmt.Errorf("fairness weight %d is out of range (1 … %d): %w", req.FairnessWeight, harvest.MaxFairnessWeight,
			shardapi.ErrInvalidArgument)
	}
	for _, k := range []struct{ name, v string }{{"concurrency_key", req.ConcurrencyKey}, {"fairness_key", req.FairnessKey}} {
		if err := checkFlowKey(k.name, k.v); err != nil {
			return err
		}
	}
	return nil
}

func checkFlowKey(name, v string) error {
	switch {
	case len(v) > MaxFlowKeyBytes:
		return fmt.Errorf("%s is %d bytes, more than %d: %w", name, len(v), MaxFlowKeyBytes, shardapi.ErrInvalidArgument)
	case !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%s is not valid UTF-8 without NUL: %w", name, shardapi.ErrInvalidArgument)
	}
	return nil
}

// flowKey is the start's key under lim: the caller's concurrency key, or
// the input's value at the limit's key pointer, or "" for a limit on the
// workflow name alone.
func flowKey(lim harvest.ConcurrencyLimit, req *StartRequest) (string, error) {
	if req.ConcurrencyKey != "" || lim.KeyPointer == "" {
		return req.ConcurrencyKey, nil
	}
	key, err := valueAt(req.Input, lim.KeyPointer)
	if err != nil {
		return "", fmt.Errorf("concurrency key of workflow %s: %w", req.WorkflowName, err)
	}
	return key, checkFlowKey("concurrency key", key)
}

// valueAt is the text of the scalar at JSON pointer ptr in doc: a string
// as it is, a number or a boolean as JSON writes it. A missing value, an
// object, an array or null is an invalid argument.
func valueAt(doc json.RawMessage, ptr string) (string, error) {
	tokens, err := harvest.ParsePointer(ptr)
	if err != nil {
		return "", fmt.Errorf("%w: %w", err, shardapi.ErrInvalidArgument)
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("input is not JSON: %w", shardapi.ErrInvalidArgument)
	}
	for _, t := range tokens {
		if v, err = step(v, t); err != nil {
			return "", fmt.Errorf("input has no value at %s: %w", ptr, shardapi.ErrInvalidArgument)
		}
	}
	switch s := v.(type) {
	case string:
		return s, nil
	case json.Number:
		return s.String(), nil
	case bool:
		return strconv.FormatBool(s), nil
	}
	return "", fmt.Errorf("input's value at %s is not a string, number or boolean: %w", ptr, shardapi.ErrInvalidArgument)
}

// step follows one reference token into an object or an array.
func step(v any, token string) (any, error) {
	switch c := v.(type) {
	case map[string]any:
		if next, ok := c[token]; ok {
			return next, nil
		}
	case []any:
		if i, err := strconv.Atoi(token); err == nil && i >= 0 && i < len(c) && token == strconv.Itoa(i) {
			return c[i], nil
		}
	}
	return nil, shardapi.ErrNotFound
}

// started wakes, after a fresh start committed, the workflow loop, or
// the flow dispatcher for a queued run (through Settle).
func (in *Intake) started(ctx context.Context, req StartRequest, held bool) {
	if req.flow != nil && !held {
		in.d.Settle(ctx, runs.Effects{Wake: loop.Flow}, nil)
		return
	}
	loop.Nudge(in.d.Wake)
}
