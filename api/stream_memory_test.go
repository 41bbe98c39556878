package api

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// streamRSSBound is how much the process's resident memory may grow
// while one read token holds its 32 streams of a run with 20 signals of
// 1 MiB (docs/security.md): the stream memory budget (64 MiB) and half
// of it again for the readers and the collector (the test process runs
// at Go's GOGC 100). Measured: +27 to +34 MiB; before the per-token cap
// and the budget (200 streams reading 4 MiB pages), +112 MiB.
const streamRSSBound = 96 << 20

// streamsReadBound bounds the time the served streams take to read the
// whole run (a deadline against a hang, not a measure of speed).
const streamsReadBound = 8 * time.Minute

// streamRSSBoundRace is streamRSSBound under the race detector, whose
// shadow memory multiplies what the same streams allocate: measured +193
// to +233 MiB (and +11 to +34 MiB without it, on the same machine).
const streamRSSBoundRace = 384 << 20

// rssBound is the bound that applies to this build.
func rssBound() int64 {
	if raceEnabled {
		return streamRSSBoundRace
	}
	return streamRSSBound
}

// peaks samples a node's /metrics until stop: the largest resident
// memory and stream memory seen.
type peaks struct {
	rss, stream int64
	err         error
	stop        chan struct{}
	done        sync.WaitGroup
}

func samplePeaks(base, authorization string) *peaks {
	p := &peaks{stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			rss, err := metricValue(base, authorization, "process_resident_memory_bytes")
			p.err = cmp.Or(p.err, err)
			stream, err := metricValue(base, authorization, "harvest_stream_memory_bytes")
			p.err = cmp.Or(p.err, err)
			p.rss, p.stream = max(p.rss, int64(rss)), max(p.stream, int64(stream))
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// end stops sampling; the peaks may be read after it.
func (p *peaks) end(t *testing.T) {
	close(p.stop)
	p.done.Wait()
	require.NoError(t, p.err)
}

// readUntil reads body until the frame with the SSE id last has arrived,
// without holding more than a small buffer.
func readUntil(body io.Reader, last int64) error {
	marker := []byte(fmt.Sprintf("\nid: %d\n", last))
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := body.Read(buf)
		window := append(tail, buf[:n]...)
		if bytes.Contains(window, marker) {
			return nil
		}
		if err != nil {
			return err
		}
		tail = append([]byte(nil), window[max(0, len(window)-len(marker)):]...)
	}
}

// TestStreamsOfOneReadToken (#41): 200 streams of one read token on a run
// with 20 signals of 1 MiB: 32 are served (each to the last event), the
// others get 429 too_many_long_polls; the node's stream memory stays
// within its budget and its resident memory within streamRSSBound, by its
// own /metrics; another client's list is answered meanwhile. Not
// parallel: it measures the process.
func TestStreamsOfOneReadToken(t *testing.T) {
	b := setupAuth(t)
	r := b.as(t, "write", "POST", "/workflows/block/start", map[string]any{})
	require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
	id := r.Body["execution_id"].(string)
	payloads := make([]string, 20)
	for i := range payloads {
		payloads[i] = strings.Repeat(string(rune('a'+i)), 1<<20)
	}
	signalPayloads(t, b.engine, id, payloads...)
	last := b.eventCount(t, id) - 1
	base := strings.TrimSuffix(b.url, BasePath)
	read := b.tokens["read"]
	rssBefore := int64(metric(t, base, read, "process_resident_memory_bytes"))

	ctx, cancel := context.WithCancel(context.Background())
	// A failure below ends the test before cancel: the held streams must
	// still end first, or the server's Close waits for them for ever.
	t.Cleanup(cancel)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	var served, refused, complete atomic.Int32
	var answered, finished sync.WaitGroup
	errs := make(chan error, 200)
	p := samplePeaks(base, read)
	for range 200 {
		answered.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/workflows/"+id+"/events/stream", nil)
			req.Header.Set("Authorization", read)
			res, err := client.Do(req)
			answered.Done()
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			switch res.StatusCode {
			case http.StatusOK:
				served.Add(1)
				if err := readUntil(res.Body, last); err != nil {
					errs <- fmt.Errorf("a served stream ended before event %d: %w", last, err)
					return
				}
				complete.Add(1)
				<-ctx.Done() // hold the stream (and its slot) until the end
			case http.StatusTooManyRequests:
				refused.Add(1)
				raw, _ := io.ReadAll(res.Body)
				if !bytes.Contains(raw, []byte(`"code":"`+codeTooManyLongPolls+`"`)) {
					errs <- fmt.Errorf("429 with body %s", raw)
				}
			default:
				raw, _ := io.ReadAll(res.Body)
				errs <- fmt.Errorf("HTTP %d %s", res.StatusCode, raw)
			}
		}()
	}
	answered.Wait()
	t.Run("ThirtyTwoServedTheRest429", func(t *testing.T) {
		require.EqualValues(t, MaxLongLivedPerTokenDefault, served.Load())
		require.EqualValues(t, 200-MaxLongLivedPerTokenDefault, refused.Load())
	})
	t.Run("AnotherClientsListIsAnswered", func(t *testing.T) {
		r := b.as(t, "write", "GET", "/workflows?page_size=1", nil)
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		require.Len(t, r.Body["workflows"], 1)
	})
	// Every served stream reads to the last event; then they all close.
	// 32 streams of 20 MiB: 40 to 105 s under the race detector on a
	// quiet 2-core machine, and more beside other packages' tests.
	require.Eventually(t, func() bool { return len(errs) > 0 || complete.Load() == served.Load() },
		streamsReadBound, 10*time.Millisecond)
	cancel()
	finished.Wait()
	p.end(t)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Run("StreamMemoryWithinItsBudget", func(t *testing.T) {
		require.Positive(t, p.stream, "the streams took pages of the budget")
		require.LessOrEqual(t, p.stream, int64(StreamMemoryDefault))
		require.Eventually(t, func() bool { return metric(t, base, read, "harvest_stream_memory_bytes") == 0 },
			30*time.Second, 10*time.Millisecond, "closed streams give their pages back")
	})
	t.Run("ResidentMemoryWithinItsBound", func(t *testing.T) {
		grew := p.rss - rssBefore
		t.Logf("resident memory %d MiB before, peak %d MiB (+%d MiB); stream memory peak %d MiB",
			rssBefore>>20, p.rss>>20, grew>>20, p.stream>>20)
		require.Less(t, grew, rssBound())
	})
}
