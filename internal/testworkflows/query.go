// Package testworkflows holds workflows that tests of several packages
// (engine, api, client) run, so each is written once.
package testworkflows

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/harvestd/harvest"
)

// Ping is QueryCounter's signal: each one counts, "stop" ends the run.
var Ping = harvest.NewSignal[string]("ping")

// QueryCounter ("query_counter") counts Ping signals in a local variable
// until "stop" and returns the count. Its queries: "count" (the count),
// "plus" (the count plus an int argument), "fails" (a handler error) and
// "sleepy" (a handler that issues a command, which a query refuses).
var QueryCounter = harvest.NewWorkflow("query_counter", func(ctx harvest.Context, _ json.RawMessage) (int, error) {
	n := 0
	harvest.SetQueryHandler(ctx, "count", func(struct{}) (int, error) { return n, nil })
	harvest.SetQueryHandler(ctx, "plus", func(k int) (int, error) { return n + k, nil })
	harvest.SetQueryHandler(ctx, "fails", func(struct{}) (int, error) { return 0, errors.New("handler says no") })
	harvest.SetQueryHandler(ctx, "sleepy", func(struct{}) (int, error) { return 0, harvest.Sleep(ctx, time.Second) })
	for {
		v, err := Ping.Receive(ctx)
		if err != nil || v == "stop" {
			return n, err
		}
		n++
	}
})
