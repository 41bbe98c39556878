package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

// The demo definitions are declared once (package demo) and used both by
// the node that runs them and by the typed handles below:
//
//	var Approved = harvest.NewSignal[Approval]("approved")
//	d.Order = harvest.NewWorkflow("order", d.order) // *harvest.Workflow[OrderInput, OrderResult]

func ExampleSignalOf() {
	baseURL, stop := exampleNode()
	defer stop()
	ctx := context.Background()
	c := client.New(baseURL)

	run, err := client.WorkflowOf(c, demo.New(demo.NewServices()).Order).
		StartIdempotent(ctx, demo.OrderInput{OrderID: "o-7", AmountCents: 1250, CustomerID: "c-1"}, "checkout-o-7")
	if err != nil {
		fmt.Println(err)
		return
	}

	approved := client.SignalOf(c, demo.Approved) // a SignalHandle[demo.Approval]
	for _, by := range []string{"ann", "ann (retry)"} {
		res, err := approved.SendIdempotent(ctx, run.ExecutionID, demo.Approval{By: by}, "approve-o-7")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: delivered=%v\n", approved.Name(), res.SignalDelivered)
	}
	// Output:
	// approved: delivered=true
	// approved: delivered=false
}

func ExampleWorkflowOf() {
	baseURL, stop := exampleNode()
	defer stop()
	ctx := context.Background()
	c := client.New(baseURL)

	orders := client.WorkflowOf(c, demo.New(demo.NewServices()).Order) // a WorkflowHandle[demo.OrderInput, demo.OrderResult]
	in := demo.OrderInput{OrderID: "o-8", AmountCents: 990, CustomerID: "c-2", SleepMS: 1}
	for range 2 {
		run, err := orders.StartIdempotent(ctx, in, "checkout-o-8", client.WithWorkflowID("order-o-8"))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s %s: started fresh=%v, deduplicated=%v\n", orders.Name(), run.WorkflowID, *run.StartedFresh, *run.Deduplicated)
	}

	run, err := orders.StartIdempotent(ctx, in, "checkout-o-8")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.SignalOf(c, demo.Approved).SendIdempotent(ctx, run.ExecutionID, demo.Approval{By: "bob"}, "approve-o-8"); err != nil {
		fmt.Println(err)
		return
	}
	out, closed, err := orders.Result(ctx, run.ExecutionID, 20*time.Second) // out is a demo.OrderResult
	if err != nil || !closed {
		fmt.Println(closed, err)
		return
	}
	fmt.Printf("result: %s by %s\n", out.Status, out.Approver)
	// Output:
	// order order-o-8: started fresh=true, deduplicated=false
	// order order-o-8: started fresh=false, deduplicated=true
	// result: approved by bob
}

// A client that does not link the worker's code names the workflow and
// its types with a reference instead of the definition.
func ExampleWorkflowOf_reference() {
	baseURL, stop := exampleNode()
	defer stop()
	ctx := context.Background()
	c := client.New(baseURL)

	orders := client.WorkflowOf(c, harvest.WorkflowRef[demo.OrderInput, demo.OrderResult]("order"))
	run, err := orders.StartIdempotent(ctx, demo.OrderInput{OrderID: "o-9", AmountCents: 500, CustomerID: "c-3", SleepMS: 1}, "checkout-o-9")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.SignalOf(c, demo.Approved).SendIdempotent(ctx, run.ExecutionID, demo.Approval{By: "cy"}, "approve-o-9"); err != nil {
		fmt.Println(err)
		return
	}
	out, closed, err := orders.Result(ctx, run.ExecutionID, 20*time.Second) // out is a demo.OrderResult
	if err != nil || !closed {
		fmt.Println(closed, err)
		return
	}
	fmt.Printf("%s: %s by %s\n", orders.Name(), out.Status, out.Approver)
	// Output:
	// order: approved by cy
}

// exampleNode starts a node for an example (setupServer: the demo
// workflows on an engine and the HTTP API, on a database of its own); stop
// ends it.
func exampleNode() (baseURL string, stop func()) {
	tb := &exampleTB{}
	defer func() {
		if r := recover(); r != nil {
			tb.cleanup()
			panic(r)
		}
	}()
	return setupServer(tb).url, tb.cleanup
}

// exampleTB is the part of testing.TB that setupServer uses, for
// examples, which get no *testing.T: failures panic, cleanups run at stop.
type exampleTB struct {
	testing.TB // nil: other methods are not used
	cleanups   []func()
}

func (*exampleTB) Helper()                           {}
func (x *exampleTB) Cleanup(f func())                { x.cleanups = append(x.cleanups, f) }
func (*exampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (*exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (*exampleTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (*exampleTB) FailNow()                          { panic("example setup failed") }

func (x *exampleTB) cleanup() {
	for i := len(x.cleanups) - 1; i >= 0; i-- {
		x.cleanups[i]()
	}
	x.cleanups = nil
}
