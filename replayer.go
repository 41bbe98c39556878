package harvest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// ReplayTimeout bounds how long ReplayHistory lets workflow code run
// without blocking.
const ReplayTimeout = time.Minute

// ReplayHistory replays a recorded history against the code of the
// workflow registered in reg as workflowName ("" takes the name from the
// history's WorkflowStarted) and returns the NonDeterminismError (or
// PanicError) the replay ends with, nil when the code still matches the
// history. Run it before deploying changed workflow code, over histories
// of runs still open.
func ReplayHistory(reg *Registry, workflowName string, events []Event) error {
	if len(events) == 0 || events[0].Type != EventWorkflowStarted {
		return fmt.Errorf("replay history: %w", ErrNoWorkflowStarted)
	}
	var started WorkflowStartedData
	if err := json.Unmarshal(events[0].Data, &started); err != nil {
		return fmt.Errorf("replay history: decode WorkflowStarted: %w", err)
	}
	if workflowName == "" {
		workflowName = started.WorkflowName
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReplayTimeout)
	defer cancel()
	info := WorkflowInfo{WorkflowName: workflowName, WorkflowID: started.WorkflowID}
	_, err := reg.RunWorkflowTask(ctx, WorkflowTask{Info: info, History: events}, zerolog.Nop())
	return err
}

// ReplayHistoryFile is ReplayHistory over the history in the file at path:
// the JSON `harvestctl -o json workflow history --all ID` prints (an
// object whose "events" hold the whole history), or a JSON array of events.
func ReplayHistoryFile(reg *Registry, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("replay history file: %w", err)
	}
	events, err := decodeHistory(raw)
	if err != nil {
		return fmt.Errorf("replay history file %s: %w", path, err)
	}
	return ReplayHistory(reg, "", events)
}

// historyFile is a page of history as the HTTP API and harvestctl print it.
type historyFile struct {
	Events     []Event `json:"events"`
	NextCursor *int64  `json:"next_cursor"`
}

func decodeHistory(raw []byte) ([]Event, error) {
	var events []Event
	if err := json.Unmarshal(raw, &events); err == nil {
		return events, nil
	}
	var page historyFile
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, err
	}
	if page.NextCursor != nil {
		return nil, ErrPartialHistory
	}
	return page.Events, nil
}
