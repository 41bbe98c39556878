package admin

import (
	"encoding/json"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// newRaftLogger returns an hclog.Logger for raft, its transport and its
// snapshot store that writes through log at debug level. When log has
// debug disabled, hclog drops everything before formatting.
func newRaftLogger(log zerolog.Logger) hclog.Logger {
	level := hclog.Off
	if log.Debug().Enabled() {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "raft",
		Level:      level,
		Output:     hclogWriter{log},
		JSONFormat: true,
	})
}

// hclogWriter turns hclog's JSON lines into zerolog debug lines: message
// "raft", fields raft_level, raft_module and line, plus hclog's own
// key-value pairs.
type hclogWriter struct{ log zerolog.Logger }

func (w hclogWriter) Write(p []byte) (int, error) {
	ev := w.log.Debug()
	if !ev.Enabled() {
		return len(p), nil
	}
	var fields map[string]any
	if err := json.Unmarshal(p, &fields); err != nil {
		ev.Bytes("line", p).Msg("raft")
		return len(p), nil
	}
	ev.Interface("raft_level", fields["@level"]).
		Interface("raft_module", fields["@module"]).
		Interface("line", fields["@message"])
	for _, k := range []string{"@level", "@module", "@message", "@timestamp"} {
		delete(fields, k)
	}
	ev.Fields(fields).Msg("raft")
	return len(p), nil
}
