package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// streamIdle is how long a forwarded stream may stay silent (the owner
// sends a keep-alive after heartbeat of silence) before the owner is
// taken for lost and the stream resumed elsewhere.
func streamIdle(heartbeat time.Duration) time.Duration { return 2*heartbeat + 5*time.Second }

// newStreamClient is the client that forwards event streams, over the
// forwarding client's TLS (tlsCfg, nil: plain HTTP). Unlike the
// forwarding client it has no overall timeout (a stream lasts as long as
// its run): only the owner's answer headers are bounded, and silence by
// streamIdle.
func newStreamClient(tlsCfg *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsCfg
	t.ResponseHeaderTimeout = 10 * time.Second
	return &http.Client{Transport: t}
}

// ownerSource relays the owner's event stream frame by frame.
type ownerSource struct {
	s      *Server
	body   io.ReadCloser
	cancel context.CancelFunc
	idle   *time.Timer
	// silence is how long the owner may stay silent (streamIdle).
	silence time.Duration
	// bytes and events relayed since the last page was charged.
	bytes  int64
	events int
}

// dialOwner opens the owner's stream from after (its Last-Event-ID). An
// answer other than a stream is returned as the owner's error.
func (s *Server) dialOwner(c *gin.Context, t Target, after int64) (source, error) {
	ctx, cancel := context.WithCancel(c.Request.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL+c.Request.URL.RequestURI(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if after >= 0 {
		req.Header.Set(lastEventIDHeader, strconv.FormatInt(after, 10))
	}
	req.Header.Set(ShardHeader, strconv.Itoa(int(t.ShardID)))
	s.signNode(req, NodeSig{To: t.Owner, Identity: identity(c)})
	res, err := s.streams.Do(req)
	if err != nil {
		cancel()
		return nil, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg:   fmt.Sprintf("forward to the owner of shard %d (%s) failed", t.ShardID, t.Owner),
			extra: gin.H{"owner": t.Owner, "shard_id": t.ShardID}}
	}
	if res.StatusCode != http.StatusOK {
		defer cancel()
		defer res.Body.Close()
		return nil, ownerError(res)
	}
	silence := streamIdle(s.cfg.StreamHeartbeat)
	return &ownerSource{s: s, body: res.Body, cancel: cancel, idle: time.AfterFunc(silence, cancel), silence: silence}, nil
}

// ownerError is the owner's JSON error answer, passed on unchanged.
func ownerError(res *http.Response) *apiError {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var body map[string]any
	if json.Unmarshal(raw, &body) != nil {
		return &apiError{status: http.StatusBadGateway, code: codeUnavailable, msg: fmt.Sprintf("the owner answered HTTP %d", res.StatusCode)}
	}
	e := &apiError{status: res.StatusCode, extra: gin.H{}}
	e.code, _ = body["code"].(string)
	e.msg, _ = body["error"].(string)
	for k, v := range body {
		if k != "code" && k != "error" {
			e.extra[k] = v
		}
	}
	return e
}

// run copies frames until the owner's "closed" event (true), its "error"
// event or a broken or silent connection. Frames that arrive together
// are relayed as a page: once the first of them is there, the page's
// share of the stream memory budget is taken, then frames are copied
// until none is waiting or the page's bound is reached, flushed, and the
// share given back. Each page after the first costs the caller's rate,
// as a local stream's pages do.
func (o *ownerSource) run(ctx context.Context, w *sseWriter) (bool, error) {
	defer o.cancel()
	defer o.body.Close()
	defer o.idle.Stop()
	rd := bufio.NewReader(o.body)
	for {
		if _, err := rd.Peek(1); err != nil {
			return false, err
		}
		if o.bytes >= o.s.streamPage || o.events >= engine.HistoryPageMax {
			o.bytes, o.events = 0, 0
			if err := o.s.chargePage(ctx, w.c); err != nil {
				return false, err
			}
		}
		closed, err := o.page(ctx, rd, w)
		if closed || err != nil || w.err != nil {
			return closed, err
		}
	}
}

// page relays the frames waiting, up to a page's bound of data, holding
// their share of the budget.
func (o *ownerSource) page(ctx context.Context, rd *bufio.Reader, w *sseWriter) (bool, error) {
	budget := o.s.budget
	o.idle.Stop() // waiting for the budget is not the owner's silence
	held, err := budget.acquire(ctx, pageCharge(o.s.streamPage))
	o.idle.Reset(o.silence)
	if err != nil {
		return false, err
	}
	defer func() { budget.release(held) }()
	w.deadline(streamWriteTimeout)
	defer w.deadline(0)
	defer w.flush()
	var size int64
	for events := 0; events < engine.HistoryPageMax && size < o.s.streamPage; events++ {
		f, err := readFrame(rd)
		if err != nil {
			return false, err
		}
		o.idle.Reset(o.silence)
		if f.event == sseError {
			return false, errors.New("the owner lost the run's shard")
		}
		if n := int64(len(f.raw)); n > o.s.streamPage {
			// One event larger than a page: it takes its own share.
			if held, err = budget.grow(ctx, held, pageCharge(n)); err != nil {
				return false, err
			}
		}
		size += int64(len(f.raw))
		o.bytes += int64(len(f.raw))
		o.events++
		w.frame(f.raw, f.id)
		if f.event == sseClosed {
			return true, nil
		}
		if rd.Buffered() == 0 {
			return false, nil
		}
	}
	return false, nil
}

// sseFrame is one event (or comment) of a stream, as read.
type sseFrame struct {
	raw       []byte
	event, id string
}

// readFrame reads lines up to a blank line.
func readFrame(rd *bufio.Reader) (sseFrame, error) {
	var f sseFrame
	var buf bytes.Buffer
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return f, err
		}
		buf.WriteString(line)
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			f.raw = buf.Bytes()
			return f, nil
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			f.event = v
		} else if v, ok := strings.CutPrefix(line, "id: "); ok {
			f.id = v
		}
	}
}
