package testworkflows

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
)

// ReplayAgrees checks that replaying a run's recorded history gives the
// commands that were recorded, however they were produced (cached state,
// a rebuild, another owner): for every prefix that ends where a batch of
// commands begins, a full replay of the prefix must issue exactly that
// batch, and a replay of the whole history nothing more. Commands compare
// by type and data, without what the engine adds when it records them
// (a timer's fire_at, a continue-as-new's successor id).
func ReplayAgrees(ctx context.Context, reg *harvest.Registry, info harvest.WorkflowInfo, history []harvest.Event) error {
	for i := 1; i <= len(history); i++ {
		if i < len(history) && (!history[i].Type.IsCommand() || history[i-1].Type.IsCommand()) {
			continue
		}
		res, err := reg.RunWorkflowTask(ctx, harvest.WorkflowTask{Info: info, History: history[:i]}, zerolog.Nop())
		if err != nil {
			return fmt.Errorf("replay of the first %d events: %w", i, err)
		}
		if err := sameCommands(res.Commands, history[i:]); err != nil {
			return fmt.Errorf("replay of the first %d events: %w", i, err)
		}
	}
	return nil
}

// sameCommands checks that the recorded events start with cmds.
func sameCommands(cmds []harvest.Command, recorded []harvest.Event) error {
	if len(cmds) > len(recorded) {
		return fmt.Errorf("%d command(s) issued, %d event(s) recorded after", len(cmds), len(recorded))
	}
	for j, c := range cmds {
		got, want := recorded[j], harvest.Event{Type: c.Type, Data: c.Data}
		if got.Type != want.Type || !reflect.DeepEqual(commandData(got), commandData(want)) {
			return fmt.Errorf("issued %s %s, recorded %s %s", want.Type, want.Data, got.Type, got.Data)
		}
	}
	return nil
}

func commandData(ev harvest.Event) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(ev.Data, &m)
	delete(m, "fire_at")
	delete(m, "new_execution_id")
	return m
}
