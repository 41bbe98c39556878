package runs

import (
	"context"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Effects is what a committed Changes asks of the engine: the waiters of
// the runs it closed to answer, the loops that have work, and the
// activity tasks to run. The engine applies it in one place (settle).
type Effects struct {
	// Closed are the runs the changes closed; Outcomes their outcomes as
	// committed, where the statements returned them.
	Closed   []uuid.UUID
	Outcomes map[uuid.UUID]shardapi.Outcome
	// Wake names the loops with work: the workflow loop (a task made due,
	// a successor created), timers, callbacks, the outbox.
	Wake loop.Set
	// Tasks counts the activity tasks inserted; Direct, when set, holds
	// the ones inserted claimed (see Direct).
	Tasks  int
	Direct *Direct
}

// Settle acts on the effects of changes whose transaction ended (err
// nil: committed): the engine's one after-commit path, which services
// are handed in their Deps.
type Settle func(ctx context.Context, fx Effects, err error)

// Effects is what the changes ask of the engine once committed (complete
// after their statements ran).
func (ch *Changes) Effects() Effects {
	fx := Effects{Closed: ch.closed, Outcomes: ch.outcomes, Tasks: len(ch.tasks.ids), Direct: ch.Direct}
	fx.Wake.Add(loop.Workflow, ch.woke || len(ch.handOvers.news) > 0)
	fx.Wake.Add(loop.Timer, len(ch.timers.ids) > 0)
	fx.Wake.Add(loop.Callback, ch.callbacksDue)
	fx.Wake.Add(loop.Outbox, ch.outboxDue)
	return fx
}
