package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// BatchItem is one start of a batch.
type BatchItem struct {
	WorkflowName string
	// WorkflowID is the business id; empty lets the server mint one.
	WorkflowID string
	// Input is encoded with encoding/json (a json.RawMessage as is).
	Input any
	// IdempotencyKey makes the item's start idempotent, as on Start.
	IdempotencyKey string
}

// BatchResult is one item's answer.
type BatchResult struct {
	// Status is the item's HTTP status: 201 created, 200 deduplicated or
	// attached, else the status its own start would have answered.
	Status int `json:"status"`
	StartResponse
	// Code and Error are the error body's, set when Status is not 2xx.
	Code  string `json:"code"`
	Error string `json:"error"`
	// Raw is the item's JSON answer.
	Raw json.RawMessage `json:"-"`
}

type batchItemBody struct {
	WorkflowName   string          `json:"workflow_name"`
	WorkflowID     string          `json:"workflow_id,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

// BatchStart starts up to 1,000 runs in one request
// (POST /workflows/batch_start) and returns one result per item, in order;
// an item's refusal is its result, not an error. A batch whose items all
// carry a key is retried after a lost answer like a keyed start (nothing
// is created twice); any other is sent once.
func (c *Client) BatchStart(ctx context.Context, items []BatchItem) ([]BatchResult, error) {
	return c.batchStart(ctx, items, false)
}

// BatchStartAtomic starts every item or none, in one transaction on one
// shard ("atomic": true): items whose workflow ids or keys belong to
// different shards are refused (a *Error with Code "spans_shards"), and so
// is the whole batch when one item fails (its index is Body["item"]). On
// success each item's result is 201 created or 200 deduplicated. It is
// retried after a lost answer as BatchStart is.
func (c *Client) BatchStartAtomic(ctx context.Context, items []BatchItem) ([]BatchResult, error) {
	return c.batchStart(ctx, items, true)
}

func (c *Client) batchStart(ctx context.Context, items []BatchItem, atomic bool) ([]BatchResult, error) {
	body := struct {
		Items  []batchItemBody `json:"items"`
		Atomic bool            `json:"atomic,omitempty"`
	}{Items: make([]batchItemBody, len(items)), Atomic: atomic}
	keyed := len(items) > 0
	for i, it := range items {
		in, err := rawJSON("input", it.Input)
		if err != nil {
			return nil, err
		}
		body.Items[i] = batchItemBody{WorkflowName: it.WorkflowName, WorkflowID: it.WorkflowID, Input: in, IdempotencyKey: it.IdempotencyKey}
		keyed = keyed && it.IdempotencyKey != ""
	}
	enc, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	var res struct {
		Results []json.RawMessage `json:"results"`
	}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/workflows/batch_start", body: enc, idempotent: keyed}, &res); err != nil {
		return nil, err
	}
	return decodeBatchResults(res.Results)
}

func decodeBatchResults(raw []json.RawMessage) ([]BatchResult, error) {
	out := make([]BatchResult, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, err
		}
		out[i].StartResponse.Status, out[i].Raw = out[i].Status, r
	}
	return out, nil
}
