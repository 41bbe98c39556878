package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/harvestd/harvest/engine"
)

// errPartialList: a shard could not be read for a batch job's page; its
// activity retries rather than skip that shard's runs.
var errPartialList = errors.New("outbound list: some shards could not be read")

// List serves GET /workflows with q in process: one page of every
// shard's runs, or an error when a shard could not be read.
func (o *Outbound) List(ctx context.Context, q engine.ListQuery) (engine.ListPage, error) {
	w, err := o.serveMethod(ctx, http.MethodGet, "/workflows?"+listValues(q).Encode(), "", nil)
	if err != nil {
		return engine.ListPage{}, err
	}
	if w.status/100 != 2 {
		return engine.ListPage{}, outboundError(w.status, w.body.Bytes())
	}
	var out listResponse
	if err := json.Unmarshal(w.body.Bytes(), &out); err != nil {
		return engine.ListPage{}, fmt.Errorf("outbound list answer: %w", err)
	}
	if out.Status == "partial" {
		return engine.ListPage{}, fmt.Errorf("shards %v: %w", out.UnavailableShards, errPartialList)
	}
	return engine.ListPage{Workflows: out.Workflows, NextCursor: out.NextCursor}, nil
}

// listValues is q as GET /workflows' query string.
func listValues(q engine.ListQuery) url.Values {
	v := url.Values{"state": q.States}
	for name, s := range map[string]string{"workflow_name": q.WorkflowName, "workflow_id": q.WorkflowID,
		"workflow_id_prefix": q.WorkflowIDPrefix, "cursor": q.Cursor} {
		if s != "" {
			v.Set(name, s)
		}
	}
	if q.PageSize > 0 {
		v.Set("page_size", strconv.Itoa(q.PageSize))
	}
	if q.Ascending {
		v.Set("order", "asc")
	}
	for name, t := range map[string]time.Time{"started_after": q.StartedAfter, "started_before": q.StartedBefore} {
		if !t.IsZero() {
			v.Set(name, t.Format(time.RFC3339Nano))
		}
	}
	return v
}
