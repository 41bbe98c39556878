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
	// err is the first failed write: the client is gone or too slow.
	err error
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
// becomes the stream's last event id. Large data is written as it is,
// not copied into a frame.
func (w *sseWriter) event(name, id string, data []byte) {
	size := len("event: \nid: \ndata: \n\n") + len(name) + len(id)
	if len(data) > sseCopyMax {
		w.write(appendHead(make([]byte, 0, size), name, id))
		w.write(data)
		w.frame([]byte("\n\n"), id)
		return
	}
	buf := appendHead(make([]byte, 0, size+len(data)), name, id)
	buf = append(buf, data...)
	w.frame(append(buf, "\n\n"...), id)
}

// sseCopyMax is the largest event data copied into its frame.
const sseCopyMax = 32 << 10

// appendHead appends an event's lines up to its data's.
func appendHead(buf []byte, name, id string) []byte {
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, '\n')
	if id != "" {
		buf = append(buf, "id: "...)
		buf = append(buf, id...)
		buf = append(buf, '\n')
	}
	return append(buf, "data: "...)
}

// write writes raw unless a write failed before.
func (w *sseWriter) write(raw []byte) {
	if w.err == nil {
		_, w.err = w.c.Writer.Write(raw)
	}
}

// deadline bounds the writes from now by d (0: no bound), where the
// connection allows it.
func (w *sseWriter) deadline(d time.Duration) {
	at := time.Time{}
	if d > 0 {
		at = time.Now().Add(d)
	}
	_ = http.NewResponseController(w.c.Writer).SetWriteDeadline(at)
}

// frame writes one encoded event (blank line included) with its id.
func (w *sseWriter) frame(raw []byte, id string) {
	w.write(raw)
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

func (w *sseWriter) flush() {
	if w.err == nil {
		w.err = http.NewResponseController(w.c.Writer).Flush()
	}
}

// progressed reports whether an event was sent since the last call.
func (w *sseWriter) progressed() bool {
	moved := w.moved
	w.moved = false
	return moved
}
