package api

import (
	"fmt"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// flow checks the start's flow-control fields and returns its priority
// (0: the default).
func (b *startBody) flow() (int, error) {
	if err := checkTexts(textParam{"concurrency_key", b.ConcurrencyKey, engine.MaxFlowKeyBytes},
		textParam{"fairness_key", b.FairnessKey, engine.MaxFlowKeyBytes}); err != nil {
		return 0, err
	}
	if b.Priority == nil {
		return 0, nil
	}
	if p := *b.Priority; p < harvest.PriorityHighest || p > harvest.PriorityLowest {
		return 0, badRequest(codeInvalidArgument, fmt.Sprintf("priority %d is out of range: %d (first) to %d (last)",
			p, harvest.PriorityHighest, harvest.PriorityLowest))
	}
	return *b.Priority, nil
}
