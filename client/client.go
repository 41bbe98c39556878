package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Defaults of New.
const (
	// UserAgentDefault is the User-Agent header unless WithUserAgent is given.
	UserAgentDefault = "harvest-go-client"
	// basePath prefixes every API route.
	basePath = "/api/harvest"
	// errorBodyMax bounds how much of an error body is read.
	errorBodyMax = 1 << 20
)

// Client calls the HTTP API of one harvestd node. It is safe for concurrent
// use.
type Client struct {
	baseURL   string
	http      *http.Client
	token     string
	userAgent string
	retry     RetryPolicy
	routes    *router // WithRouting: requests go to their shard's owner
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the http.Client requests go through (default
// http.DefaultClient; nil keeps it). Its Timeout, if any, also bounds
// Result's long-poll.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithTLSConfig sends requests over a transport with cfg (an https
// baseURL): e.g. RootCAs holding the cluster's CA (harvestctl --ca-cert).
// It replaces the http.Client WithHTTPClient set.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *Client) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg
		c.http = &http.Client{Transport: t}
	}
}

// WithToken sends "Authorization: Bearer <token>" on every request. An
// empty token sends no Authorization header.
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// WithUserAgent sets the User-Agent header (default UserAgentDefault).
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client of the node at baseURL, e.g.
// "http://127.0.0.1:7233". A baseURL without a scheme gets "http://"; a
// path in baseURL (a reverse proxy prefix) is kept in front of
// /api/harvest. A malformed baseURL is reported by the first request.
func New(baseURL string, opts ...Option) *Client {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	c := &Client{baseURL: strings.TrimRight(baseURL, "/"), http: http.DefaultClient, userAgent: UserAgentDefault,
		retry: DefaultRetryPolicy}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// call is one API request, fully encoded before the first attempt so that
// a retry resends identical bytes and the same Idempotency-Key.
type call struct {
	method string
	// path is below /api/harvest, with its segments already escaped.
	path  string
	query url.Values
	// body is the encoded JSON body; nil sends none.
	body []byte
	// key is sent as the Idempotency-Key header when not empty.
	key string
	// taskToken is sent as the Harvest-Task-Token header when not empty.
	taskToken string
	// idempotent marks a keyless request whose replay has the effect of
	// one (terminate, a gate with its id): safe to retry after any
	// transport error.
	idempotent bool
	// once marks a request that must not be resent once it may have
	// reached a node, not even after a 503 (a token creation): a node
	// that forwards a write to the raft leader answers 503 also when the
	// leader's answer is lost.
	once bool
	// route names the call's shard for a routing client (WithRouting);
	// the zero route goes to the base node.
	route route
}

// reply is a 2xx answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// do runs c and decodes a non-empty 2xx body into out (when out is not
// nil). A non-2xx answer is an *Error.
func (c *Client) do(ctx context.Context, cl call, out any) (*reply, error) {
	rep, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	if out != nil && len(bytes.TrimSpace(rep.body)) > 0 {
		if err := json.Unmarshal(rep.body, out); err != nil {
			return nil, fmt.Errorf("%s %s: decode %d answer: %w", cl.method, cl.path, rep.status, err)
		}
	}
	return rep, nil
}

// attempt makes one attempt of cl, at its shard's owner for a routing
// client (an owner refusing the connection: at the base node at once).
func (c *Client) attempt(ctx context.Context, cl call) (*reply, error) {
	base := c.baseFor(cl)
	rep, err := c.attemptAt(ctx, cl, base)
	if err == nil || base == c.baseURL {
		return rep, err
	}
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status == http.StatusServiceUnavailable {
		c.staleRoutes() // the owner is gone, or moving its shard
	}
	if refused(err) {
		return c.attemptAt(ctx, cl, c.baseURL)
	}
	return rep, err
}

// attemptAt makes one attempt of cl at the node of base. Every attempt
// builds a fresh *http.Request from the same call (see send).
func (c *Client) attemptAt(ctx context.Context, cl call, base string) (*reply, error) {
	req, err := c.newRequest(ctx, cl, base)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err // a *url.Error: it names the method and URL
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, decodeError(resp)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read %d answer: %w", cl.method, cl.path, resp.StatusCode, err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

func (c *Client) newRequest(ctx context.Context, cl call, base string) (*http.Request, error) {
	target := base + basePath + cl.path
	if len(cl.query) > 0 {
		target += "?" + cl.query.Encode()
	}
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", cl.method, cl.path, err)
	}
	req.Header.Set("Accept", "application/json")
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.key != "" {
		req.Header.Set("Idempotency-Key", cl.key)
	}
	if cl.taskToken != "" {
		req.Header.Set("Harvest-Task-Token", cl.taskToken)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	return req, nil
}

// encodeBody encodes a request body struct.
func encodeBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}

// rawJSON encodes a caller's value (input, payload, memo). nil, and an
// empty json.RawMessage, are "absent" and give nil; a json.RawMessage or
// []byte holding JSON is sent as is.
func rawJSON(field string, v any) (json.RawMessage, error) {
	var b []byte
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", field, err)
		}
		return enc, nil
	}
	if len(b) == 0 {
		return nil, nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("encode %s: not valid JSON", field)
	}
	return b, nil
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }
