package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/httpactivity"
)

// HTTPActivities keeps the HTTP activities registered at run time. In a
// raft cluster writes on a node that is not the leader return
// *LeaderError; the API forwards them.
type HTTPActivities interface {
	// CreateHTTPActivity registers an activity and returns it as stored;
	// the same config again changes nothing, another under its name is
	// httpactivity.ErrExists.
	CreateHTTPActivity(ctx context.Context, a httpactivity.Config) (httpactivity.Config, error)
	// HTTPActivities lists every activity, by name.
	HTTPActivities(ctx context.Context) ([]httpactivity.Config, error)
	// DeleteHTTPActivity deletes an activity; httpactivity.ErrUnknown
	// when none.
	DeleteHTTPActivity(ctx context.Context, name string) error
}

// URLChecker refuses a URL the engines' outbound address rules refuse;
// engine.CallbackPolicy is one.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// ActivityNames reports the activities registered in Go;
// *harvest.Registry is one.
type ActivityNames interface {
	HasActivity(name string) bool
}

func (s *Server) httpActivityRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/admin/activities", needAdmin, s.listHTTPActivities)
	s.handle(g, http.MethodPost, "/admin/activities", needAdmin, s.registerHTTPActivity)
	s.handle(g, http.MethodDelete, "/admin/activities/:activity", needAdmin, s.deleteHTTPActivity)
}

// httpActivities is the activity store, or false after answering 404.
func (s *Server) httpActivities(c *gin.Context) (HTTPActivities, bool) {
	if s.cfg.HTTPActivities == nil {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: "this node keeps no http activities (they need the raft catalog or a node without gossip)"})
		return nil, false
	}
	return s.cfg.HTTPActivities, true
}

// httpActivityBody is the body of POST /admin/activities.
type httpActivityBody struct {
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Timeout json.RawMessage   `json:"timeout"`
	Retry   *retryBody        `json:"retry"`
}

// retryBody is a registration's retry policy, durations as in
// parseDuration.
type retryBody struct {
	MaxAttempts        int             `json:"max_attempts"`
	InitialInterval    json.RawMessage `json:"initial_interval"`
	BackoffCoefficient float64         `json:"backoff_coefficient"`
	MaxInterval        json.RawMessage `json:"max_interval"`
	NonRetryableErrors []string        `json:"non_retryable_errors"`
}

// HTTPActivityView is an activity as the API shows it: its header values
// redacted.
type HTTPActivityView struct {
	Name      string            `json:"name"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers,omitempty"`
	Timeout   string            `json:"timeout,omitempty"`
	Retry     *RetryView        `json:"retry,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
}

// RetryView is a registration's retry policy as the API shows it.
type RetryView struct {
	MaxAttempts        int      `json:"max_attempts,omitempty"`
	InitialInterval    string   `json:"initial_interval,omitempty"`
	BackoffCoefficient float64  `json:"backoff_coefficient,omitempty"`
	MaxInterval        string   `json:"max_interval,omitempty"`
	NonRetryableErrors []string `json:"non_retryable_errors,omitempty"`
}

func viewHTTPActivity(a httpactivity.Config) HTTPActivityView {
	a = a.Redacted()
	v := HTTPActivityView{Name: a.Name, URL: a.URL, Headers: a.Headers, Timeout: durationText(a.Timeout), CreatedAt: a.CreatedAt}
	if r := a.Retry; r != nil {
		v.Retry = &RetryView{MaxAttempts: r.MaxAttempts, InitialInterval: durationText(r.InitialInterval),
			BackoffCoefficient: r.BackoffCoefficient, MaxInterval: durationText(r.MaxInterval), NonRetryableErrors: r.NonRetryableErrors}
	}
	return v
}

// registerHTTPActivity handles POST /admin/activities.
func (s *Server) registerHTTPActivity(c *gin.Context) {
	store, ok := s.httpActivities(c)
	if !ok {
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	a, err := httpActivityConfig(raw)
	if err != nil {
		s.fail(c, err)
		return
	}
	setAuditTarget(c, "activity="+a.Name)
	if err := s.checkHTTPActivity(c.Request.Context(), a); err != nil {
		s.fail(c, err)
		return
	}
	s.leaderCall(c, raw, func() (int, any, error) {
		stored, err := store.CreateHTTPActivity(c.Request.Context(), a)
		return http.StatusCreated, viewHTTPActivity(stored), httpActivityError(err)
	})
}

// checkHTTPActivity refuses a name the Go registry holds (409) and a URL
// the outbound address rules refuse (422).
func (s *Server) checkHTTPActivity(ctx context.Context, a httpactivity.Config) error {
	if s.cfg.ActivityNames != nil && s.cfg.ActivityNames.HasActivity(a.Name) {
		return &apiError{status: http.StatusConflict, code: codeConflict,
			msg: fmt.Sprintf("activity %q is registered in Go on this node; an http activity may not take its name", a.Name)}
	}
	var urls URLChecker = engine.CallbackPolicy{}
	if s.cfg.OutboundURLs != nil {
		urls = s.cfg.OutboundURLs
	}
	if err := urls.CheckURL(ctx, a.URL); err != nil {
		var refused *engine.CallbackError
		if errors.As(err, &refused) {
			err = errors.New(refused.Reason)
		}
		return &apiError{status: http.StatusUnprocessableEntity, code: "url_refused",
			msg: "url refused by the outbound address rules (--callback-allow-cidr): " + err.Error(), extra: gin.H{"url": a.URL}}
	}
	return nil
}

func httpActivityConfig(raw []byte) (httpactivity.Config, error) {
	var b httpActivityBody
	if err := decodeObject(raw, &b); err != nil {
		return httpactivity.Config{}, err
	}
	a := httpactivity.Config{Name: b.Name, URL: b.URL, Headers: b.Headers}
	timeout, err := parseDuration("timeout", b.Timeout)
	if err != nil {
		return a, err
	}
	if timeout != nil {
		a.Timeout = *timeout
	}
	if b.Retry != nil {
		if a.Retry, err = b.Retry.retry(); err != nil {
			return a, err
		}
	}
	return a, httpActivityError(a.Validate())
}

func (r retryBody) retry() (*httpactivity.Retry, error) {
	out := &httpactivity.Retry{MaxAttempts: r.MaxAttempts, BackoffCoefficient: r.BackoffCoefficient,
		NonRetryableErrors: r.NonRetryableErrors}
	for _, d := range []struct {
		field string
		raw   json.RawMessage
		dst   *time.Duration
	}{{"retry.initial_interval", r.InitialInterval, &out.InitialInterval}, {"retry.max_interval", r.MaxInterval, &out.MaxInterval}} {
		v, err := parseDuration(d.field, d.raw)
		if err != nil {
			return nil, err
		}
		if v != nil {
			*d.dst = *v
		}
	}
	return out, nil
}

// httpActivityError maps the httpactivity sentinels to their answers.
func httpActivityError(err error) error {
	switch {
	case errors.Is(err, httpactivity.ErrInvalidConfig):
		return badRequest(codeInvalidArgument, err.Error())
	case errors.Is(err, httpactivity.ErrExists):
		return &apiError{status: http.StatusConflict, code: codeConflict, msg: err.Error() + ": delete it first to change it"}
	case errors.Is(err, httpactivity.ErrUnknown):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: err.Error()}
	}
	return err
}

// listHTTPActivities handles GET /admin/activities: header values
// redacted.
func (s *Server) listHTTPActivities(c *gin.Context) {
	store, ok := s.httpActivities(c)
	if !ok {
		return
	}
	list, err := store.HTTPActivities(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]HTTPActivityView, 0, len(list))
	for _, a := range list {
		out = append(out, viewHTTPActivity(a))
	}
	c.JSON(http.StatusOK, gin.H{"activities": out})
}

// deleteHTTPActivity handles DELETE /admin/activities/{name}.
func (s *Server) deleteHTTPActivity(c *gin.Context) {
	store, ok := s.httpActivities(c)
	if !ok {
		return
	}
	name := c.Param("activity")
	if err := checkText("activity name", name, maxNameLen, true); err != nil {
		s.fail(c, err)
		return
	}
	s.leaderCall(c, nil, func() (int, any, error) {
		err := store.DeleteHTTPActivity(c.Request.Context(), name)
		return http.StatusOK, gin.H{"name": name, "deleted": true}, httpActivityError(err)
	})
}
