package harvesttest_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/harvesttest"
)

// Reminder is the input of the remind workflow.
type Reminder struct {
	To    string        `json:"to"`
	After time.Duration `json:"after"`
}

var sendEmail = harvest.NewActivity("send_email", func(ctx *harvest.ActivityContext, to string) (string, error) {
	return "", errors.New("no mail server in tests")
})

// remind sleeps (a durable timer), then sends its email.
var remind = harvest.NewWorkflow("remind", func(ctx harvest.Context, in Reminder) (string, error) {
	if err := harvest.Sleep(ctx, in.After); err != nil {
		return "", err
	}
	return sendEmail.Execute(ctx, in.To).Get(ctx)
})

// Example tests a workflow that sleeps a day: the test clock skips the
// day, and a fake stands in for the activity that sends the email.
func Example() {
	// In a test, t is the test's *testing.T.
	t := &exampleTB{}
	defer t.cleanup()

	reg := harvest.NewRegistry().MustRegister(sendEmail, remind)
	env := harvesttest.New(t, reg)
	env.ReplaceActivity("send_email", harvesttest.Fake(func(ctx *harvest.ActivityContext, to string) (string, error) {
		return "sent to " + to + " on attempt " + fmt.Sprint(ctx.Attempt()), nil
	}))

	run := env.Start("remind", Reminder{To: "ada@example.com", After: 24 * time.Hour},
		harvesttest.WithIdempotencyKey("reminder-1"))
	skipped := env.SkipTime(run.ExecutionID) // to the timer's fire time
	var out string
	env.Output(run.ExecutionID, &out)
	fmt.Println(out)
	fmt.Println("skipped", skipped.Round(time.Hour))
	// Output:
	// sent to ada@example.com on attempt 1
	// skipped 24h0m0s
}

// exampleTB is the testing.TB of an example, which has no *testing.T: it
// panics where a test would fail or skip, and runs cleanups when told.
type exampleTB struct {
	testing.TB // nil: what is not overridden panics
	cleanups   []func()
}

func (t *exampleTB) Helper()                      {}
func (t *exampleTB) Name() string                 { return "Example" }
func (t *exampleTB) Cleanup(f func())             { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) Logf(string, ...any)          {}
func (t *exampleTB) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (t *exampleTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (t *exampleTB) Errorf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (t *exampleTB) Skipf(f string, args ...any)  { panic("skipped: " + fmt.Sprintf(f, args...)) }

func (t *exampleTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
