package demo

import (
	"encoding/json"

	"github.com/harvestd/harvest"
)

// TallyName counts the inputs a batch start collected: its input is a
// JSON list (a batch's run gets the list of its starts' inputs, in their
// order), and it returns the list's length through one noop_step
// activity. The fault-injection suite's batch starts run it.
const TallyName = "tally"

// tally returns how many items its input lists.
func (d *Demo) tally(ctx harvest.Context, in []json.RawMessage) (int, error) {
	return d.NoopStep.Execute(ctx, len(in)).Get(ctx)
}
