package engine

import (
	"context"
	"maps"

	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/schedule"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// newOutbox makes the outbox loop (internal/outbox) with its Deps and
// the table of its kinds.
func (e *Engine) newOutbox() {
	d := outbox.Deps{Service: e.service("outbox"), Outbound: outboxOutbound{e.cfg.Outbound}, RetryMax: e.cfg.TaskRetryMax}
	e.outbox = outbox.New(d, e.bus.Outbox, outboxKinds())
}

// outboxKinds is every kind of outbox row: the outbox's command kinds,
// and the keyed starts of schedule fires and deferred items.
func outboxKinds() outbox.Table {
	t := outbox.Commands()
	maps.Copy(t, outbox.KeeperKinds())
	t[schedule.OutboxKind] = outbox.KeyedStart[schedule.FireRequest]{Start: schedule.FireStart, Refused: schedule.Refused,
		Queue: schedule.QueueOutcome, Started: schedule.FireStarted, Failed: schedule.FireFailed}
	t[deferred.OutboxKind] = outbox.KeyedStart[store.DeferredFire]{Start: deferred.FireStart, Refused: deferred.Refused,
		Queue: deferred.QueueOutcome, Started: DeferredStarted, Failed: DeferredFailed}
	return t
}

// outboxOutbound is the engine's Outbound as the outbox sees it: its
// starts are OutboundStarts.
type outboxOutbound struct{ Outbound }

// Start fires s as a StartRequest.
func (o outboxOutbound) Start(ctx context.Context, s shardapi.OutboundStart) (StartResult, error) {
	return o.Outbound.Start(ctx, StartRequest{WorkflowName: s.WorkflowName, WorkflowID: s.WorkflowID, Input: s.Input,
		IdempotencyKey: s.IdempotencyKey, ReusePolicy: s.ReusePolicy, ConflictPolicy: s.ConflictPolicy,
		ExecutionTimeout: s.ExecutionTimeout, RunTimeout: s.RunTimeout,
		ConcurrencyKey: s.ConcurrencyKey, Priority: s.Priority, FairnessKey: s.FairnessKey, FairnessWeight: s.FairnessWeight})
}
