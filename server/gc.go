package server

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

const (
	// flagGCPercent sets the Go collector's target, as GOGC does.
	flagGCPercent = "gc-percent"
	// gcPercentDefault lets the heap grow to five times what is live
	// before a collection. A node's live heap is small (tens of MB) and it
	// allocates fast (every request, batch and workflow task), so Go's
	// default of 100 collects very often: at 400, harvestd spent 5-7 %
	// less CPU per one-activity workflow, for about 20 MB more resident
	// memory under load (docs/performance.md).
	gcPercentDefault = 400
)

// setGCPercent applies --gc-percent, unless GOGC is set (not empty) in
// the environment: an operator's GOGC wins.
func setGCPercent(c *cli.Context, log zerolog.Logger) error {
	p := c.Int(flagGCPercent)
	if p < -1 {
		return fmt.Errorf("--%s %d: want a percentage, or -1 to turn the collector off", flagGCPercent, p)
	}
	if env := os.Getenv("GOGC"); env != "" {
		log.Debug().Str("gogc", env).Msg("GOGC is set; --gc-percent ignored")
		return nil
	}
	debug.SetGCPercent(p)
	return nil
}
