package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/harvestd/harvest/client"
)

// benchBatchMax is the server's item limit of one batch start.
const benchBatchMax = 1000

// batchOp sends one batch of fresh keyed starts and requires every item
// to be created.
func (b *bench) batchOp(ctx context.Context, n int64) error {
	items := make([]client.BatchItem, b.cfg.batchSize)
	for i := range items {
		items[i] = client.BatchItem{WorkflowName: b.cfg.workflow, Input: b.cfg.input,
			IdempotencyKey: fmt.Sprintf("%s-%d-%d", b.prefix, n, i)}
	}
	res, err := b.api(n).BatchStart(ctx, items)
	if err != nil {
		return err
	}
	for i, r := range res {
		if r.Status != http.StatusCreated || r.StartedFresh == nil || !*r.StartedFresh {
			return wrong(r.Status, cmp.Or(r.Code, "not_started_fresh"), "batch item %d (key %s): %s", i, items[i].IdempotencyKey, r.Raw)
		}
	}
	return nil
}
