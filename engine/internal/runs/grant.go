package runs

import (
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// GrantSlot records, with the signal that carries it, a keeper's grant
// (harvest.FlowGrantSignal) to ex: a run waiting QUEUED for its key's
// keeper (a limit counted across the cluster) becomes RUNNING, its first
// task due, in the signal's transaction (store.QueueGrantSlots). A run
// that is not waiting is left as it is.
func (ch *Changes) GrantSlot(ex *store.Exec) {
	if ex.State != shardapi.StateQueued {
		return
	}
	ch.grants = append(ch.grants, ex.ID)
	ch.woke = true
}

// queueGrants queues the promotion of the runs granted slots.
func (ch *Changes) queueGrants(b *pgx.Batch) {
	if len(ch.grants) > 0 {
		store.QueueGrantSlots(b, ch.grants)
	}
}
