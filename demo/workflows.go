package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/harvestd/harvest"
)

// Names of the demo workflows and signal.
const (
	OnboardingName = "onboarding"
	OrderName      = "order"
	ApprovedSignal = "approved"
	// OrderStatusQuery answers where an order is: charging, awaiting
	// approval, approved by <who>.
	OrderStatusQuery = "status"
	// NoopChainName runs N no-op activities one after another: the
	// workflow harvestctl bench --activities N measures.
	NoopChainName = "noop_chain"
	// NoopChainMax bounds NoopChainInput.Activities.
	NoopChainMax = 1000
	// ApprovalRaceName races the "approved" signal, a timer and an
	// automatic approval activity: the first to come decides.
	ApprovalRaceName = "approval_race"
)

// NoopChainInput is the noop_chain workflow's input.
type NoopChainInput struct {
	Activities int `json:"activities"`
}

// OnboardingInput is the onboarding workflow's input.
type OnboardingInput struct {
	UserID int    `json:"user_id"`
	Email  string `json:"email,omitempty"`
}

// OnboardingResult is the onboarding workflow's output.
type OnboardingResult struct {
	UserRecord string `json:"user_record"`
	EmailID    string `json:"email_id"`
}

// OrderInput is the order workflow's input.
type OrderInput struct {
	OrderID     string `json:"order_id"`
	AmountCents int    `json:"amount_cents"`
	CustomerID  string `json:"customer_id"`
	// ApprovalTimeoutMS bounds the wait for the "approved" signal
	// (default one hour).
	ApprovalTimeoutMS int64 `json:"approval_timeout_ms,omitempty"`
	// SleepMS is the pause after approval (default one second).
	SleepMS int64 `json:"sleep_ms,omitempty"`
}

// OrderResult is the order workflow's output.
type OrderResult struct {
	ChargeID string `json:"charge_id"`
	Status   string `json:"status"` // "approved" or "approval_timeout"
	Approver string `json:"approver,omitempty"`
}

// Approval is the payload of the "approved" signal.
type Approval struct {
	By string `json:"by"`
}

// Approved is the typed "approved" signal.
var Approved = harvest.NewSignal[Approval](ApprovedSignal)

// Demo is the demo workflows and activities bound to their services.
type Demo struct {
	Services   *Services
	CreateUser *harvest.Activity[OnboardingInput, OnboardingResult]
	NoopStep   *harvest.Activity[int, int]
	NoopChain  *harvest.Workflow[NoopChainInput, int]
	ChargeCard *harvest.Activity[OrderInput, string]
	// RefundCharge refunds a charge (by its id): the order's cleanup when
	// it is cancelled after the charge.
	RefundCharge *harvest.Activity[string, string]
	Onboarding   *harvest.Workflow[OnboardingInput, OnboardingResult]
	Order        *harvest.Workflow[OrderInput, OrderResult]
	// AutoApprove is approval_race's activity: it answers after
	// ApprovalRaceInput.AutoApproveMS.
	AutoApprove  *harvest.Activity[int64, string]
	ApprovalRace *harvest.Workflow[ApprovalRaceInput, ApprovalRaceResult]
	// Counter sums "add" signals and continues as new every few of them
	// (counter.go).
	Counter *harvest.Workflow[CounterInput, CounterResult]
	// ParentChain runs noop_chain children (family.go); Approver signals
	// an order from workflow code.
	ParentChain *harvest.Workflow[ParentChainInput, int]
	Approver    *harvest.Workflow[ApproverInput, string]
	// Tally counts a batch start's collected inputs (tally.go).
	Tally *harvest.Workflow[[]json.RawMessage, int]
	// Report runs under a concurrency limit per customer (report.go).
	Report       *harvest.Workflow[ReportInput, string]
	RenderReport *harvest.Activity[ReportInput, string]
	// Export runs under a limit per tenant counted across the cluster
	// (export.go).
	Export *harvest.Workflow[ExportInput, string]
	// Cart holds items its add_item update adds (cart.go).
	Cart *harvest.Workflow[struct{}, CartState]
}

// New binds the demo definitions to svc.
func New(svc *Services) *Demo {
	d := &Demo{Services: svc}
	d.CreateUser = harvest.NewActivity("create_user", func(ctx *harvest.ActivityContext, in OnboardingInput) (OnboardingResult, error) {
		rec, err := svc.UserDB.Do(ctx, ctx.Subkey("db").String())
		if err != nil {
			return OnboardingResult{}, err
		}
		mail, err := svc.Mailer.Do(ctx, ctx.Subkey("email").String())
		return OnboardingResult{UserRecord: rec, EmailID: mail}, err
	}, harvest.ActivityOptions{StartToClose: 30 * time.Second})
	d.ChargeCard = harvest.NewActivity("charge_card", func(ctx *harvest.ActivityContext, in OrderInput) (string, error) {
		return svc.Payments.Do(ctx, ctx.IdempotencyKey().String())
	}, harvest.ActivityOptions{StartToClose: 30 * time.Second, Retry: harvest.Exponential(3, 200*time.Millisecond)})
	d.RefundCharge = harvest.NewActivity("refund_charge", func(ctx *harvest.ActivityContext, chargeID string) (string, error) {
		return svc.Refunds.Do(ctx, ctx.IdempotencyKey().String())
	}, harvest.ActivityOptions{StartToClose: 30 * time.Second, Retry: harvest.Exponential(5, 200*time.Millisecond)})
	d.Onboarding = harvest.NewWorkflow(OnboardingName, func(ctx harvest.Context, in OnboardingInput) (OnboardingResult, error) {
		return d.CreateUser.Execute(ctx, in).Get(ctx)
	})
	d.Order = harvest.NewWorkflow(OrderName, d.order)
	// StartToClose as its siblings': an attempt whose outcome could not be
	// recorded (the database went away) is retried after it, not after the default.
	d.NoopStep = harvest.NewActivity("noop_step", func(_ *harvest.ActivityContext, i int) (int, error) { return i, nil },
		harvest.ActivityOptions{StartToClose: 30 * time.Second})
	d.NoopChain = harvest.NewWorkflow(NoopChainName, d.noopChain).
		WithInputSchema(fmt.Appendf(nil, `{"type":"object","required":["activities"],`+
			`"properties":{"activities":{"type":"integer","minimum":0,"maximum":%d}}}`, NoopChainMax))
	d.AutoApprove = harvest.NewActivity("auto_approve", autoApprove, harvest.ActivityOptions{StartToClose: 48 * time.Hour}) // outlasts the default 24 h race
	d.ApprovalRace = harvest.NewWorkflow(ApprovalRaceName, d.approvalRace)
	d.Counter = harvest.NewWorkflow(CounterName, d.counter).WithInputSchema(counterSchema).WithSignals(Add)
	d.ParentChain = harvest.NewWorkflow(ParentChainName, d.parentChain)
	d.Approver = harvest.NewWorkflow(ApproverName, d.approver)
	d.Tally = harvest.NewWorkflow(TallyName, d.tally)
	d.RenderReport = newRenderReport()
	d.Report = newReport(d.RenderReport)
	d.Export = newExport()
	d.Cart = harvest.NewWorkflow(CartName, d.cart).WithSignals(Checkout)
	return d
}

// order charges the card, waits for an approval, then pauses. Cancelled
// after the charge, it refunds it (on a disconnected context, which the
// cancel does not reach) and ends CANCELLED; cancelled during the charge,
// it ends CANCELLED at once.
func (d *Demo) order(ctx harvest.Context, in OrderInput) (OrderResult, error) {
	status := "charging"
	harvest.SetQueryHandler(ctx, OrderStatusQuery, func(struct{}) (string, error) { return status, nil })
	// The charge runs to its end even when a cancel comes meanwhile (a
	// disconnected context): abandoned, it could still go through and
	// never be refunded. A cancel that came during it refunds it at once.
	charging := harvest.NewDisconnectedContext(ctx)
	charge, err := d.ChargeCard.Execute(charging, in).Get(charging)
	if err != nil {
		return OrderResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return OrderResult{}, d.refundIfCancelled(ctx, charge, err)
	}
	status = "awaiting approval"
	timeout := msOr(in.ApprovalTimeoutMS, time.Hour)
	approval, ok, err := Approved.ReceiveWithTimeout(ctx, timeout)
	if err != nil {
		return OrderResult{}, d.refundIfCancelled(ctx, charge, err)
	}
	if !ok {
		return OrderResult{ChargeID: charge, Status: "approval_timeout"}, nil
	}
	status = "approved by " + approval.By
	if err := harvest.Sleep(ctx, msOr(in.SleepMS, time.Second)); err != nil {
		return OrderResult{}, d.refundIfCancelled(ctx, charge, err)
	}
	return OrderResult{ChargeID: charge, Status: "approved", Approver: approval.By}, nil
}

// refundIfCancelled refunds charge when err is the run's cancellation,
// and returns err (or the refund's failure).
func (d *Demo) refundIfCancelled(ctx harvest.Context, charge string, err error) error {
	if !errors.Is(err, harvest.ErrCanceled) {
		return err
	}
	cleanup := harvest.NewDisconnectedContext(ctx)
	if _, rerr := d.RefundCharge.Execute(cleanup, charge).Get(cleanup); rerr != nil {
		return rerr
	}
	return err
}

// noopChain runs in.Activities no-op activities in sequence.
func (d *Demo) noopChain(ctx harvest.Context, in NoopChainInput) (int, error) {
	for i := range in.Activities {
		if _, err := d.NoopStep.Execute(ctx, i).Get(ctx); err != nil {
			return i, err
		}
	}
	return in.Activities, nil
}

// Definitions lists everything to register.
func (d *Demo) Definitions() []harvest.Registrable {
	return []harvest.Registrable{d.CreateUser, d.ChargeCard, d.RefundCharge, d.Onboarding, d.Order, d.NoopStep, d.NoopChain,
		d.AutoApprove, d.ApprovalRace, d.Counter, d.ParentChain, d.Approver, d.Tally, d.Report, d.RenderReport, d.Export, d.Cart}
}

// Register adds the demo definitions to reg.
func (d *Demo) Register(reg *harvest.Registry) error { return reg.Register(d.Definitions()...) }

func msOr(ms int64, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	return time.Duration(ms) * time.Millisecond
}
