package api

import (
	"fmt"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// listFilters reads GET /workflows' started range (RFC 3339) and counts
// switch into q.
func listFilters(c *gin.Context, q *engine.ListQuery) error {
	var err error
	if q.StartedAfter, err = timeParam(c, "started_after"); err != nil {
		return err
	}
	if q.StartedBefore, err = timeParam(c, "started_before"); err != nil {
		return err
	}
	switch c.Query("counts") {
	case "", "false":
	case "true":
		q.Counts = true
	default:
		return badRequest(codeInvalidArgument, "counts must be true or false")
	}
	return nil
}

// timeParam reads an optional RFC 3339 timestamp (zero when absent).
func timeParam(c *gin.Context, name string) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, nil
	}
	if err := checkTexts(textParam{name, v, maxIDLen}); err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, badRequest(codeInvalidArgument, fmt.Sprintf("%s %q must be an RFC 3339 timestamp (2026-01-02T15:04:05Z)", name, v))
	}
	return t, nil
}

// sumCounts adds up the counts of the shards that answered.
func sumCounts(pages []engine.ListPage, errs []error) map[string]int64 {
	out := map[string]int64{}
	for i, p := range pages {
		if errs[i] != nil {
			continue
		}
		for state, n := range p.Counts {
			out[state] += n
		}
	}
	return out
}
