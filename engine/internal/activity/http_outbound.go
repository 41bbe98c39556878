package activity

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/ssrf"
	"github.com/harvestd/harvest/engine/shardapi"
)

// activityOutbound is the outbound HTTP of HTTP activities
// (harvest.NewHTTPActivity): the completion callbacks' address rules
// (ssrf.Policy, --callback-allow-cidr) checked on the URL before the
// request and on every address dialled, and no redirect followed. The
// attempt's deadline bounds each request.
type activityOutbound struct {
	policy ssrf.Policy
	client *http.Client
}

var _ harvest.OutboundHTTP = (*activityOutbound)(nil)

func newActivityOutbound(p ssrf.Policy) *activityOutbound {
	dialer := &net.Dialer{Timeout: ssrf.Timeout, Control: p.DialControl}
	t := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second,
		TLSHandshakeTimeout: ssrf.Timeout}
	return &activityOutbound{policy: p, client: &http.Client{Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// CheckURL refuses a URL the address rules refuse.
func (o *activityOutbound) CheckURL(ctx context.Context, raw string) error {
	err := o.policy.CheckURL(ctx, raw)
	var refused *shardapi.CallbackError
	if errors.As(err, &refused) {
		return fmt.Errorf("URL %q refused: %s", refused.URL, refused.Reason)
	}
	return err
}

// Do sends req.
func (o *activityOutbound) Do(req *http.Request) (*http.Response, error) { return o.client.Do(req) }
