package harvest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Argument digests. Every command the code issues (ActivityScheduled,
// TimerStarted, MarkerRecorded) records a digest of the arguments that
// make it what it is: an activity's name, input and stored options, a
// timer's duration, a marker's name (and a version marker's change id).
// Replay compares it with the digest of what the code passes now, so
// code that issues the same kinds of command with other arguments (a
// changed input, a fan-out over a Go map in another order) is a
// NonDeterminismError instead of results paired with the wrong calls.
//
// A digest is the first digestLen hex digits of one SHA-256 over the
// arguments, each written after a domain tag and NUL separated. A recorded
// command without a digest (written before digests existed) is matched by
// kind, id and name only, as before.

// digestLen is how many hex digits of the SHA-256 a digest keeps.
const digestLen = 16

// args is the digest of what the code passed to one command, with the
// arguments themselves to tell which one differs on a mismatch.
type args struct {
	// sum is the digest; empty for commands without arguments (completion).
	sum string
	// field is the argument a mismatch is reported on, unless activity
	// is set: then input or options is compared with the recorded ones.
	field    string
	activity bool
	input    json.RawMessage
	opts     ActivityOptions
}

// mismatch describes how a recorded digest differs from a, or returns ""
// when they agree or either is missing.
func (a args) mismatch(ev Event, recorded string) string {
	if a.sum == "" || recorded == "" || recorded == a.sum {
		return ""
	}
	return fmt.Sprintf("argument %q differs: history digest %s, code digest %s", a.differing(ev), recorded, a.sum)
}

// differing names the argument of the recorded command ev that differs.
func (a args) differing(ev Event) string {
	if !a.activity {
		return a.field
	}
	var rec ActivityScheduledData
	switch {
	case json.Unmarshal(ev.Data, &rec) != nil:
		return "arguments"
	case !sameJSON(rec.Input, a.input):
		return "input"
	case activityDigest("", nil, rec.Options) != activityDigest("", nil, a.opts):
		return "options"
	}
	return "arguments"
}

// digest hashes NUL-separated parts, after a domain tag.
type digest struct{ b []byte }

func newDigest(domain string, size int) digest {
	d := digest{b: make([]byte, 0, len(domain)+size+96)}
	d.str(domain)
	return d
}

func (d *digest) bytes(b []byte) { d.b = append(append(d.b, b...), 0) }
func (d *digest) str(s string)   { d.b = append(append(d.b, s...), 0) }
func (d *digest) int(n int64)    { d.b = append(strconv.AppendInt(d.b, n, 10), 0) }
func (d *digest) ms(t time.Duration) {
	d.int(t.Truncate(time.Millisecond).Milliseconds())
}

func (d *digest) sum() string {
	s := sha256.Sum256(d.b)
	return hex.EncodeToString(s[:digestLen/2])
}

func activityDigest(name string, input json.RawMessage, opts ActivityOptions) string {
	d := newDigest("activity", len(name)+len(input)+len(opts.Queue))
	d.str(name)
	d.bytes(input)
	d.options(opts)
	return d.sum()
}

// options writes the stored form of opts (ActivityOptions.Stored), field
// by field.
func (d *digest) options(o ActivityOptions) {
	d.ms(o.StartToClose)
	d.ms(o.ScheduleToClose)
	d.ms(o.HeartbeatTimeout)
	d.str(o.Queue)
	if r := o.Retry; r != nil {
		d.int(int64(r.MaxAttempts))
		d.ms(r.InitialInterval)
		d.b = append(strconv.AppendFloat(d.b, r.BackoffCoefficient, 'g', -1, 64), 0)
		d.ms(r.MaxInterval)
		d.int(int64(len(r.NonRetryableErrors)))
		for _, t := range r.NonRetryableErrors {
			d.str(t)
		}
	}
}

func timerDigest(ms int64) string {
	d := newDigest("timer", 0)
	d.int(ms)
	return d.sum()
}

func markerDigest(name, changeID string) string {
	d := newDigest("marker", len(name)+len(changeID))
	d.str(name)
	d.str(changeID)
	return d.sum()
}

func activityArgs(name string, input json.RawMessage, opts ActivityOptions) args {
	return args{sum: activityDigest(name, input, opts), activity: true, input: input, opts: opts}
}

func timerArgs(ms int64) args { return args{sum: timerDigest(ms), field: "duration"} }

func markerArgs(name, changeID string) args {
	a := args{sum: markerDigest(name, changeID), field: "name"}
	if changeID != "" {
		a.field = "change_id"
	}
	return a
}

// sameJSON reports whether two JSON texts hold the same value; recorded
// data comes back from the database re-encoded (key order, spacing).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return string(mustJSON(x)) == string(mustJSON(y))
}
