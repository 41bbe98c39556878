package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// napWF closes a second after it starts: longer than the body bound of
// the test server, so a wait on it outlives that bound.
var napWF = harvest.NewWorkflow("nap", func(ctx harvest.Context, _ any) (string, error) {
	if err := harvest.Sleep(ctx, time.Second); err != nil {
		return "", err
	}
	return "rested", nil
})

// TestBodyReadTimeout: a body trickled slower than the bound is answered
// 408 and its connection closed; answers held after the body was read
// (?wait=) are not cut by the bound.
func TestBodyReadTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.engine.Registry().Register(napWF))
	srv, err := New(Config{BodyReadTimeout: 200 * time.Millisecond}, SingleShard(b.engine))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	t.Run("TrickledBodyGets408AndClose", func(t *testing.T) {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		// The test's own bound: a server that never answers fails here
		// instead of hanging.
		require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
		_, err = fmt.Fprintf(conn, "POST %s/workflows/block/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", BasePath)
		require.NoError(t, err)
		stop := make(chan struct{})
		defer close(stop)
		go trickle(conn, stop)
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusRequestTimeout, res.StatusCode, "%s", raw)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body))
		require.Equal(t, codeBodyTimeout, body["code"])
		require.NotEmpty(t, body["error"])
		require.True(t, res.Close, "the answer closes the connection")
		_, err = br.ReadByte()
		require.Error(t, err, "the server closed the connection")
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection is still open: %v", err)
	})

	t.Run("StartWaitOutlivesTheBound", func(t *testing.T) {
		res, err := http.Post(ts.URL+BasePath+"/workflows/nap/start?wait=20s", "application/json", strings.NewReader(`{"input": null}`))
		require.NoError(t, err)
		defer res.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		require.Equal(t, http.StatusCreated, res.StatusCode, "%v", body)
		require.NotNil(t, body["result"], "the wait was cut short: %v", body)
		require.Equal(t, "COMPLETED", body["result"].(map[string]any)["state"])
	})

	t.Run("ResultLongPollOutlivesTheBound", func(t *testing.T) {
		res, err := http.Post(ts.URL+BasePath+"/workflows/nap/start", "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		var started map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&started))
		res.Body.Close()
		res, err = http.Get(ts.URL + BasePath + "/workflows/" + started["execution_id"].(string) + "/result?wait=20s")
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	})
}

// trickle sends one body byte every 100 ms until stop or a write fails.
func trickle(conn net.Conn, stop chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}
