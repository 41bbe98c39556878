package httpactivity_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/httpactivity"
)

func TestConfig(t *testing.T) {
	valid := func() httpactivity.Config {
		return httpactivity.Config{Name: "payments.charge", URL: "https://pay.example.com/charge",
			Headers: map[string]string{"Authorization": "Bearer sk_x"}, Timeout: time.Minute,
			Retry: &httpactivity.Retry{MaxAttempts: 5, NonRetryableErrors: []string{"http_503"}}}
	}
	t.Run("Valid", func(t *testing.T) {
		require.NoError(t, valid().Validate())
	})
	t.Run("Invalid", func(t *testing.T) {
		for name, change := range map[string]func(c *httpactivity.Config){
			"EmptyName":         func(c *httpactivity.Config) { c.Name = "" },
			"NameWithSlash":     func(c *httpactivity.Config) { c.Name = "a/b" },
			"NoURL":             func(c *httpactivity.Config) { c.URL = "" },
			"RelativeURL":       func(c *httpactivity.Config) { c.URL = "/charge" },
			"FTP":               func(c *httpactivity.Config) { c.URL = "ftp://example.com/x" },
			"Credentials":       func(c *httpactivity.Config) { c.URL = "https://u:p@example.com/" },
			"IdempotencyKey":    func(c *httpactivity.Config) { c.Headers = map[string]string{"idempotency-key": "k"} },
			"HarvestHeader":     func(c *httpactivity.Config) { c.Headers = map[string]string{"Harvest-Attempt": "9"} },
			"ContentType":       func(c *httpactivity.Config) { c.Headers = map[string]string{"Content-Type": "text/plain"} },
			"BadHeaderName":     func(c *httpactivity.Config) { c.Headers = map[string]string{"X Y": "v"} },
			"HeaderValueNL":     func(c *httpactivity.Config) { c.Headers = map[string]string{"X-Y": "a\r\nb"} },
			"NegativeTimeout":   func(c *httpactivity.Config) { c.Timeout = -time.Second },
			"LongTimeout":       func(c *httpactivity.Config) { c.Timeout = httpactivity.MaxTimeout + 1 },
			"TooManyAttempts":   func(c *httpactivity.Config) { c.Retry.MaxAttempts = httpactivity.MaxAttempts + 1 },
			"UnlimitedAttempts": func(c *httpactivity.Config) { c.Retry.MaxAttempts = -1 },
			"Coefficient":       func(c *httpactivity.Config) { c.Retry.BackoffCoefficient = 0.5 },
			"LongInterval":      func(c *httpactivity.Config) { c.Retry.MaxInterval = 2 * time.Hour },
		} {
			t.Run(name, func(t *testing.T) {
				c := valid()
				change(&c)
				require.ErrorIs(t, c.Validate(), httpactivity.ErrInvalidConfig)
			})
		}
	})
	t.Run("RedactedHidesHeaderValues", func(t *testing.T) {
		c := valid()
		r := c.Redacted()
		require.Equal(t, httpactivity.RedactedValue, r.Headers["Authorization"])
		require.Equal(t, "Bearer sk_x", c.Headers["Authorization"], "the original keeps its value")
	})
	t.Run("Same", func(t *testing.T) {
		a, b := valid(), valid()
		b.CreatedAt = time.Now()
		require.True(t, a.Same(b))
		b.Headers["Authorization"] = "Bearer other"
		require.False(t, a.Same(b))
		b = valid()
		b.Retry.MaxAttempts = 6
		require.False(t, a.Same(b))
		b.Retry = nil
		require.False(t, a.Same(b))
	})
}
