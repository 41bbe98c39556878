package schedule

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/robfig/cron/v3"
)

// The pure time logic of schedules: a schedule's nominal times (its cron
// expression in its time zone, or its interval), the deterministic jitter
// of each, and the key of each fire. Nominal times are instants: a cron
// expression is evaluated in its zone, so a wall-clock time that a DST
// change repeats is one nominal time per instant it names, and one the
// change skips is no nominal time at all (robfig/cron's rules, see
// docs/schedules.md); keys name them in UTC, which never repeats.

// cronParser reads the standard five fields (minute, hour, day of month,
// month, day of week) and the @hourly-style descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// scheduleClock computes the nominal times of one schedule spec.
type scheduleClock struct {
	cron     *cron.SpecSchedule // nil: an interval schedule
	interval time.Duration
	offset   time.Duration
	end      *time.Time
}

// newScheduleClock validates the timing fields of spec.
func newScheduleClock(spec shardapi.ScheduleSpec) (*scheduleClock, error) {
	c := &scheduleClock{interval: spec.Interval, offset: spec.Offset, end: spec.EndAt}
	switch {
	case spec.Cron != "" && spec.Interval != 0:
		return nil, fmt.Errorf("a schedule has a cron expression or an interval, not both: %w", shardapi.ErrInvalidArgument)
	case spec.Cron != "":
		return c, c.parseCron(spec.Cron, spec.TimeZone)
	case spec.TimeZone != "":
		return nil, fmt.Errorf("time_zone applies to a cron expression only: %w", shardapi.ErrInvalidArgument)
	case spec.Interval < time.Second || spec.Interval > maxScheduleSpan:
		return nil, fmt.Errorf("interval %s: want a cron expression or an interval from 1s to %s: %w", spec.Interval, maxScheduleSpan, shardapi.ErrInvalidArgument)
	case spec.Offset < 0 || spec.Offset >= spec.Interval:
		return nil, fmt.Errorf("offset %s: want 0 up to the interval: %w", spec.Offset, shardapi.ErrInvalidArgument)
	}
	return c, nil
}

func (c *scheduleClock) parseCron(expr, zone string) error {
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return fmt.Errorf("time zone %q is not an IANA zone name: %w", zone, shardapi.ErrInvalidArgument)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return fmt.Errorf("cron expression %q: %s: %w", expr, err.Error(), shardapi.ErrInvalidArgument)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return fmt.Errorf("cron expression %q: use an interval instead of @every: %w", expr, shardapi.ErrInvalidArgument)
	}
	spec.Location = loc
	if spec.Next(time.Unix(0, 0)).IsZero() {
		return fmt.Errorf("cron expression %q never fires: %w", expr, shardapi.ErrInvalidArgument)
	}
	c.cron = spec
	return nil
}

// next is the first nominal time after t; false when there is none (the
// schedule's end passed).
func (c *scheduleClock) next(t time.Time) (time.Time, bool) {
	var n time.Time
	if c.cron != nil {
		n = c.cron.Next(t)
	} else {
		n = nextInterval(t, c.interval, c.offset)
	}
	if n.IsZero() || (c.end != nil && n.After(*c.end)) {
		return time.Time{}, false
	}
	return n.UTC(), true
}

// nextInterval is the first k·interval + offset after the Unix epoch that
// is later than t.
func nextInterval(t time.Time, interval, offset time.Duration) time.Time {
	since := t.Sub(time.Unix(0, 0).Add(offset))
	k := since / interval // rounds toward zero
	if since >= 0 || since%interval == 0 {
		k++
	}
	return time.Unix(0, 0).Add(offset + k*interval)
}

// upcoming lists up to n nominal times after t.
func (c *scheduleClock) upcoming(t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		next, ok := c.next(t)
		if !ok {
			break
		}
		out, t = append(out, next), next
	}
	return out
}

// fireJitter is the delay of a fire after its nominal time: a hash of the
// schedule, its generation and the nominal time, below jitter, so every
// attempt and every owner computes the same one.
func fireJitter(id string, generation int64, nominal time.Time, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	_, _ = h.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(generation)), uint64(nominal.UnixNano())))
	return time.Duration(h.Sum64() % uint64(jitter))
}

// NominalFormat names a nominal time in keys and run ids (a fire's
// workflow id under allow_all).
const NominalFormat = "2006-01-02T15:04:05.000Z"

// FireKey is the idempotency key of a schedule's fire at nominal:
// hv:sched:<schedule id>:<generation>:<nominal time in UTC>.
func FireKey(id string, generation int64, nominal time.Time) string {
	return fmt.Sprintf("hv:sched:%s:%d:%s", id, generation, nominal.UTC().Format(NominalFormat))
}

// TriggerKey is the idempotency key of a trigger of a schedule that
// carries the client's key: hv:sched:<schedule id>:<generation>:trigger:<key>
// (a nominal time never starts with "trigger").
func TriggerKey(id string, generation int64, key string) string {
	return fmt.Sprintf("hv:sched:%s:%d:trigger:%s", id, generation, key)
}
