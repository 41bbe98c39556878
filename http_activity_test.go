package harvest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		in   string
		want time.Duration
	}{
		"absent":        {"", 0},
		"seconds":       {"3", 3 * time.Second},
		"negative":      {"-5", 0},
		"huge":          {"99999999999999999", maxRetryAfter},
		"http date":     {now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		"date in past":  {now.Add(-time.Hour).Format(http.TimeFormat), 0},
		"date far away": {now.Add(48 * time.Hour).Format(http.TimeFormat), maxRetryAfter},
		"garbage":       {"soon", 0},
	} {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, retryAfter(tc.in, now)) })
	}
}

func TestHTTPAnswer(t *testing.T) {
	for name, tc := range map[string]struct {
		status       int
		body         string
		limit        int64
		out          string
		errType      string
		nonRetryable bool
	}{
		"ok":             {status: 200, body: ` {"a": 1} `, out: `{"a": 1}`},
		"empty":          {status: 204, out: `null`},
		"not json":       {status: 200, body: "<html>", errType: "http_invalid_answer", nonRetryable: true},
		"too large":      {status: 200, body: `"0123456789"`, limit: 4, errType: "http_answer_too_large", nonRetryable: true},
		"bad request":    {status: 400, errType: "http_400", nonRetryable: true},
		"not found":      {status: 404, errType: "http_404", nonRetryable: true},
		"redirect":       {status: 302, errType: "http_302", nonRetryable: true},
		"timeout":        {status: 408, errType: "http_408"},
		"in flight":      {status: 409, errType: "http_409"},
		"rate limited":   {status: 429, errType: "http_429"},
		"server error":   {status: 500, errType: "http_500"},
		"unavailable":    {status: 503, errType: "http_503"},
		"binary garbage": {status: 502, body: "\xff\x00", errType: "http_502"},
	} {
		t.Run(name, func(t *testing.T) {
			res := &http.Response{StatusCode: tc.status, Status: http.StatusText(tc.status), Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(tc.body))}
			out, err := httpAnswer(res, "http://svc/x", positiveOr(tc.limit, DefaultMaxAnswerBytes))
			if tc.errType == "" {
				require.NoError(t, err)
				require.JSONEq(t, tc.out, string(out))
				return
			}
			info := ToErrorInfo(err)
			require.Equal(t, tc.errType, info.Type)
			require.Equal(t, tc.nonRetryable, info.NonRetryable)
		})
	}
}

func TestHTTPActivityWithoutEngine(t *testing.T) {
	ctx := NewActivityContext(t.Context(), ActivityInfo{}, nil, zerolog.Nop())
	_, err := callHTTP(ctx, "http://svc/x", HTTPActivityOptions{}, 1)
	info := ToErrorInfo(err)
	require.Equal(t, "http_unavailable", info.Type)
	require.True(t, info.NonRetryable)
}
