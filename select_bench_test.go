package harvest_test

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
)

// BenchmarkSelectTask compares the replay cost of a workflow task that
// closes a one-activity workflow with one that closes race, whose select
// also waits on a signal and a timer.
func BenchmarkSelectTask(b *testing.B) {
	one := harvest.NewWorkflow("one", func(ctx harvest.Context, _ struct{}) (string, error) {
		return echo.Execute(ctx, "act").Get(ctx)
	})
	reg := harvest.NewRegistry().MustRegister(echo, race, one)
	for _, name := range []string{"one", "race"} {
		b.Run(name, func(b *testing.B) {
			h := newHistory(b, reg, name, struct{}{})
			h.mustTask()
			h.append(completed("1", "act"))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.reg.RunWorkflowTask(b.Context(), harvest.WorkflowTask{Info: h.info, History: h.events}, zerolog.Nop()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
