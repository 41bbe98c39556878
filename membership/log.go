package membership

import (
	"bytes"

	"github.com/rs/zerolog"
)

// logWriter turns memberlist's log lines ("[WARN] memberlist: text") into
// debug lines with the fields memberlist_level and line.
type logWriter struct{ log zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	ev := w.log.Debug()
	if !ev.Enabled() {
		return len(p), nil
	}
	line := bytes.TrimSpace(p)
	var level []byte
	if rest, ok := bytes.CutPrefix(line, []byte("[")); ok {
		if l, text, ok := bytes.Cut(rest, []byte("]")); ok {
			level, line = l, bytes.TrimSpace(text)
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	ev.Bytes("memberlist_level", level).Bytes("line", line).Msg("memberlist")
	return len(p), nil
}
