package server

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

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
	//
	// A high target also keeps a spike's heap: after a burst of garbage
	// the next collection waits until the heap is five times what was
	// live at the last one, and only then is the memory given back to the
	// operating system. --memory-limit bounds that: near the limit the
	// collector runs whatever the target, and the runtime returns freed
	// memory to the system to stay under it.
	gcPercentDefault = 400
	// flagMemoryLimit sets the Go runtime's soft memory limit, as
	// GOMEMLIMIT does: a size such as 1536MiB or 2GiB; 0 (the default)
	// sets none.
	flagMemoryLimit = "memory-limit"
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

// setMemoryLimit applies --memory-limit, unless GOMEMLIMIT is set (not
// empty) in the environment: an operator's GOMEMLIMIT wins.
func setMemoryLimit(c *cli.Context, log zerolog.Logger) error {
	n, err := parseMemoryLimit(c.String(flagMemoryLimit))
	if err != nil {
		return err
	}
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		log.Debug().Str("gomemlimit", env).Msg("GOMEMLIMIT is set; --memory-limit ignored")
		return nil
	}
	if n > 0 {
		debug.SetMemoryLimit(n)
	}
	return nil
}

// memoryUnits are the suffixes of --memory-limit, GOMEMLIMIT's.
var memoryUnits = []struct {
	suffix string
	scale  int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// parseMemoryLimit reads a --memory-limit value: bytes, or a number with
// a suffix B, KiB, MiB, GiB or TiB; "" and 0 mean no limit.
func parseMemoryLimit(v string) (int64, error) {
	bad := fmt.Errorf("--%s %q: want a size such as 1536MiB or 2GiB (B, KiB, MiB, GiB, TiB), or 0 for none", flagMemoryLimit, v)
	if v == "" {
		return 0, nil
	}
	num, scale := v, int64(1)
	for _, u := range memoryUnits {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, scale = n, u.scale
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/scale {
		return 0, bad
	}
	return n * scale, nil
}
