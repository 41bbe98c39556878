package testworkflows

import (
	"errors"

	"github.com/harvestd/harvest"
)

// Add is Tally's update: it adds its argument to the total and answers
// the new total; a negative argument is refused by its validator, and
// "boom" (any argument of 13) fails in its handler.
var Add = harvest.NewUpdate[int, int]("add")

// Hold is Tally's other update: its handler answers the payload of the
// next Release signal.
var Hold = harvest.NewUpdate[struct{}, string]("hold")

// Release answers a Hold update.
var Release = harvest.NewSignal[string]("release")

// Tally ("update_tally") keeps a total that Add updates change, until Ping
// "stop", and returns it.
var Tally = harvest.NewWorkflow("update_tally", func(ctx harvest.Context, _ struct{}) (int, error) {
	total := 0
	Add.SetHandler(ctx, func(_ harvest.Context, n int) (int, error) {
		if n == 13 {
			return 0, errors.New("unlucky")
		}
		total += n
		return total, nil
	}, func(n int) error {
		if n < 0 {
			return errors.New("the total only goes up")
		}
		return nil
	})
	Hold.SetHandler(ctx, func(ctx harvest.Context, _ struct{}) (string, error) { return Release.Receive(ctx) }, nil)
	for {
		v, err := Ping.Receive(ctx)
		if err != nil || v == "stop" {
			return total, err
		}
	}
})
