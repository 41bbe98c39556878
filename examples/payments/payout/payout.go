// Package payout is an example Harvest workflow: a payout that reserves
// funds, waits for a person's approval (at most a deadline), holds a
// cooling-off period, then transfers the money and notifies the
// recipient. Every downstream call carries a stable idempotency key, so a
// retried or replayed step never moves money twice.
package payout

import (
	"time"

	"github.com/harvestd/harvest"
)

// Names of the workflow and its signal.
const (
	WorkflowName = "payout"
	ApprovedName = "approved"
)

// Defaults of Input.
const (
	ApprovalTimeoutDefault = time.Hour
	CoolingOffDefault      = 24 * time.Hour
)

// Input starts a payout.
type Input struct {
	PayoutID    string `json:"payout_id"`
	AmountCents int64  `json:"amount_cents"`
	Recipient   string `json:"recipient"`
	// ApprovalTimeoutMS bounds the wait for the approval (default one hour).
	ApprovalTimeoutMS int64 `json:"approval_timeout_ms,omitempty"`
	// CoolingOffMS is the durable pause between approval and transfer
	// (default 24 hours).
	CoolingOffMS int64 `json:"cooling_off_ms,omitempty"`
}

// Result is how a payout ended.
type Result struct {
	Status      string `json:"status"` // paid or expired
	Reservation string `json:"reservation"`
	Transfer    string `json:"transfer,omitempty"`
	Notice      string `json:"notice,omitempty"`
	ApprovedBy  string `json:"approved_by,omitempty"`
}

// Approval is the payload of the approved signal.
type Approval struct {
	By string `json:"by"`
}

// Approved is the declared signal: a payout answers any other name with
// 404 unknown_signal and a payload that is not an Approval with 422.
var Approved = harvest.NewSignal[Approval](ApprovedName)

// Payout is the workflow and its activities, bound to a bank.
type Payout struct {
	Bank     *Bank
	Reserve  *harvest.Activity[Input, string]
	Release  *harvest.Activity[string, string]
	Pay      *harvest.Activity[Input, Result]
	Workflow *harvest.Workflow[Input, Result]
}

// New binds the definitions to bank.
func New(bank *Bank) *Payout {
	p := &Payout{Bank: bank}
	opts := harvest.ActivityOptions{StartToClose: 30 * time.Second, Retry: harvest.Exponential(5, time.Second)}
	p.Reserve = harvest.NewActivity("reserve_funds", func(ctx *harvest.ActivityContext, in Input) (string, error) {
		return bank.Do(ctx, "reserve", ctx.IdempotencyKey().String())
	}, opts)
	p.Release = harvest.NewActivity("release_funds", func(ctx *harvest.ActivityContext, reservation string) (string, error) {
		return bank.Do(ctx, "release", ctx.IdempotencyKey().String())
	}, opts)
	p.Pay = harvest.NewActivity("send_payout", p.pay, opts)
	p.Workflow = harvest.NewWorkflow(WorkflowName, p.run).WithSignals(Approved)
	return p
}

// pay makes two downstream calls in one activity: each has its own
// subkey, so a retry after the transfer went through repeats neither.
func (p *Payout) pay(ctx *harvest.ActivityContext, in Input) (Result, error) {
	transfer, err := p.Bank.Do(ctx, "transfer", ctx.Subkey("transfer").String())
	if err != nil {
		return Result{}, err
	}
	notice, err := p.Bank.Do(ctx, "notify", ctx.Subkey("notify").String())
	return Result{Transfer: transfer, Notice: notice}, err
}

func (p *Payout) run(ctx harvest.Context, in Input) (Result, error) {
	reservation, err := p.Reserve.Execute(ctx, in).Get(ctx)
	if err != nil {
		return Result{}, err
	}
	approval, ok, err := Approved.ReceiveWithTimeout(ctx, msOr(in.ApprovalTimeoutMS, ApprovalTimeoutDefault))
	if err != nil {
		return Result{}, err
	}
	if !ok {
		if _, err := p.Release.Execute(ctx, reservation).Get(ctx); err != nil {
			return Result{}, err
		}
		return Result{Status: "expired", Reservation: reservation}, nil
	}
	if err := harvest.Sleep(ctx, msOr(in.CoolingOffMS, CoolingOffDefault)); err != nil {
		return Result{}, err
	}
	paid, err := p.Pay.Execute(ctx, in).Get(ctx)
	paid.Status, paid.Reservation, paid.ApprovedBy = "paid", reservation, approval.By
	return paid, err
}

// Definitions lists the workflow and its activities.
func (p *Payout) Definitions() []harvest.Registrable {
	return []harvest.Registrable{p.Reserve, p.Release, p.Pay, p.Workflow}
}

// Registry is a registry of the definitions.
func (p *Payout) Registry() (*harvest.Registry, error) {
	reg := harvest.NewRegistry()
	return reg, reg.Register(p.Definitions()...)
}

func msOr(ms int64, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	return time.Duration(ms) * time.Millisecond
}
