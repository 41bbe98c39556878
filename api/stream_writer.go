package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// sseWriter writes server-sent events and remembers the last event id
// sent, where a resumed source continues.
type sseWriter struct {
	c *gin.Context
	// last is the last event_id sent (-1: none yet).
	last int64
	// forwarded: another node forwarded this stream and resumes it.
	forwarded bool
	// every is the longest silence before a keep-alive comment.
	every time.Duration
	wrote time.Time
	moved bool
}

// newSSEWriter commits the answer to an event stream.
func newSSEWriter(c *gin.Context, after int64, every time.Duration) *sseWriter {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	w := &sseWriter{c: c, last: after, forwarded: c.GetHeader(ForwardedHeader) != "", every: every, wrote: time.Now()}
	w.flush()
	return w
}

// event writes one event; data is one line of JSON. A non-empty id
// becomes the stream's last event id.
func (w *sseWriter) event(name, id string, data []byte) {
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, "event: "+name+"\n"...)
	if id != "" {
		buf = append(buf, "id: "+id+"\n"...)
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	w.frame(buf, id)
}

// frame writes one encoded event (blank line included) with its id.
func (w *sseWriter) frame(raw []byte, id string) {
	_, _ = w.c.Writer.Write(raw)
	w.wrote = time.Now()
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		w.last = n
		w.moved = true
	}
}

// heartbeat writes a comment line after w.every of silence.
func (w *sseWriter) heartbeat() {
	if time.Since(w.wrote) < w.every {
		return
	}
	w.frame([]byte(": keep-alive\n\n"), "")
	w.flush()
}

func (w *sseWriter) flush() { w.c.Writer.Flush() }

// progressed reports whether an event was sent since the last call.
func (w *sseWriter) progressed() bool {
	moved := w.moved
	w.moved = false
	return moved
}
