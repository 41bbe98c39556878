package engine

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/activity"
	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/intake"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/schedule"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Handles the engine's tests keep on what moved into its services.

// recordResolved records id as outbox row rowID's resolved target
// (outbox.RecordResolved on e's fence).
func (e *Engine) recordResolved(ctx context.Context, rowID int64, id uuid.UUID) (uuid.UUID, error) {
	return outbox.RecordResolved(ctx, e.fence, rowID, id)
}

// errOutboxGone is outbox.ErrGone.
var errOutboxGone = outbox.ErrGone

// A schedule fire's outcomes, and the format of a nominal time in its
// keys and workflow ids (internal/schedule).
const (
	firePending   = schedule.FirePending
	fireStarted   = schedule.FireStarted
	fireSkipped   = schedule.FireSkipped
	nominalFormat = schedule.NominalFormat
)

// batchCloseTries bounds the batches one deferred start closes to make
// room (internal/deferred).
const batchCloseTries = deferred.BatchCloseTries

// A task token's prefix and its stored hash (internal/activity).
const taskTokenPrefix = activity.TokenPrefix

func hashToken(token string) []byte { return activity.HashToken(token) }

// The intake's (internal/intake): its policy matrices, its batches' calls
// and replies, and the single paths the batches fall back to.
type (
	decision    = intake.Decision
	startCall   = intake.StartCall
	startReply  = intake.StartReply
	probeCall   = intake.ProbeCall
	probeReply  = intake.ProbeReply
	signalCall  = intake.SignalCall
	signalReply = intake.SignalReply
)

const (
	decideFresh             = intake.DecideFresh
	decideAttach            = intake.DecideAttach
	decideReject            = intake.DecideReject
	decideTerminateAndStart = intake.DecideTerminateAndStart
	decideSignal            = intake.DecideSignal

	oneTripPause  = intake.OneTripPause
	earlyStale    = intake.EarlyStale
	maxClockLag   = intake.MaxClockLag
	expectHolding = intake.ExpectHolding
)

func decideStart(prior string, reuse ReusePolicy, conflict ConflictPolicy) decision {
	return intake.DecideStart(prior, reuse, conflict)
}

func decideSignalWithStart(prior string, reuse ReusePolicy) decision {
	return intake.DecideSignalWithStart(prior, reuse)
}

func taken(a *store.ExpectError) bool { return intake.Taken(a) }

// earlyView is what a start prepared for a one-trip batch (intake.Early).
type earlyView struct {
	id  uuid.UUID
	at  time.Time
	ran bool
}

func (v earlyView) done() bool { return v.ran }

func early(r StartRequest) earlyView {
	id, at, ran := intake.Early(r)
	return earlyView{id: id, at: at, ran: ran}
}

func (e *Engine) startBatch(ctx context.Context, reqs []StartRequest) []startReply {
	return e.in.StartBatch(ctx, reqs)
}

func (e *Engine) fromReply(ctx context.Context, req StartRequest, r startReply) (StartResult, error) {
	return e.in.FromReply(ctx, req, r)
}

func (e *Engine) freshChecks(ctx context.Context, req *StartRequest) error {
	return e.in.FreshChecks(ctx, req)
}

func (e *Engine) prepareEarly(ctx context.Context, req *StartRequest) { e.in.PrepareEarly(ctx, req) }

func (e *Engine) answerProbes(ctx context.Context, calls []*probeCall) { e.in.AnswerProbes(ctx, calls) }

func (e *Engine) signalBatch(ctx context.Context, calls []*signalCall) []signalReply {
	return e.in.SignalBatch(ctx, calls)
}

func (e *Engine) signalTx(ctx context.Context, req SignalRequest) (SignalResult, error) {
	return e.in.SignalTx(ctx, req)
}
