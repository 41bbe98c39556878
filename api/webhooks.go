package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/webhook"
)

// Webhooks keeps the webhook receivers. In a raft cluster writes on a
// node that is not the leader return *LeaderError; the API forwards them.
type Webhooks interface {
	// CreateWebhook adds a receiver and returns it as stored; the same
	// config again changes nothing, another under its name is
	// webhook.ErrExists.
	CreateWebhook(ctx context.Context, w webhook.Config) (webhook.Config, error)
	// Webhooks lists every receiver, by name.
	Webhooks(ctx context.Context) ([]webhook.Config, error)
	// Webhook returns a receiver from this node's copy.
	Webhook(name string) (webhook.Config, bool, error)
	// DeleteWebhook deletes a receiver; webhook.ErrUnknown when none.
	DeleteWebhook(ctx context.Context, name string) error
}

// maxWebhookBody caps a delivery's body (Stripe's and GitHub's payloads
// stay far below; GitHub caps its own at 25 MB but sends less for every
// event a workflow would start on): the smaller of this and MaxBodyBytes.
const maxWebhookBody = 512 << 10

func (s *Server) webhookRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/admin/webhooks", needAdmin, s.listWebhooks)
	s.handle(g, http.MethodPost, "/admin/webhooks", needAdmin, s.createWebhook)
	s.handle(g, http.MethodDelete, "/admin/webhooks/:webhook", needAdmin, s.deleteWebhook)
	// The provider's signature is the credential: no bearer token.
	s.handle(g, http.MethodPost, "/webhooks/:webhook", capability, s.receiveWebhook)
}

// webhooks is the receiver store, or false after answering 404.
func (s *Server) webhooks(c *gin.Context) (Webhooks, bool) {
	if s.cfg.Webhooks == nil {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: "this node keeps no webhooks (they need the raft catalog or a node without gossip)"})
		return nil, false
	}
	return s.cfg.Webhooks, true
}

// webhookBody is the body of POST /admin/webhooks.
type webhookBody struct {
	Name              string           `json:"name"`
	Provider          webhook.Provider `json:"provider"`
	Secret            string           `json:"secret"`
	Action            webhook.Action   `json:"action"`
	Workflow          string           `json:"workflow"`
	Signal            string           `json:"signal"`
	WorkflowIDPointer string           `json:"workflow_id_pointer"`
	KeyPointer        string           `json:"key_pointer"`
	SignatureHeader   string           `json:"signature_header"`
	TimestampHeader   string           `json:"timestamp_header"`
	// NoTimestamp asks a generic receiver to sign the body only (a new
	// one signs a timestamp by default: webhook.Config.WithDefaults).
	NoTimestamp bool            `json:"no_timestamp"`
	Tolerance   json.RawMessage `json:"tolerance"`
}

// WebhookView is a receiver as the API shows it: its secret redacted.
type WebhookView struct {
	Name              string           `json:"name"`
	Provider          webhook.Provider `json:"provider"`
	Secret            string           `json:"secret"`
	Action            webhook.Action   `json:"action"`
	Workflow          string           `json:"workflow"`
	Signal            string           `json:"signal,omitempty"`
	WorkflowIDPointer string           `json:"workflow_id_pointer,omitempty"`
	KeyPointer        string           `json:"key_pointer,omitempty"`
	SignatureHeader   string           `json:"signature_header,omitempty"`
	TimestampHeader   string           `json:"timestamp_header,omitempty"`
	// Tolerance is shown when the signature covers a timestamp.
	Tolerance string    `json:"tolerance,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Path is the receiver's URL path, to give the provider.
	Path string `json:"path"`
}

func viewWebhook(w webhook.Config) WebhookView {
	w = w.Redacted()
	v := WebhookView{Name: w.Name, Provider: w.Provider, Secret: w.Secret, Action: w.Action, Workflow: w.Workflow,
		Signal: w.Signal, WorkflowIDPointer: w.WorkflowIDPointer, KeyPointer: w.KeyPointer,
		SignatureHeader: w.SignatureHeader, TimestampHeader: w.TimestampHeader, CreatedAt: w.CreatedAt,
		Path: BasePath + "/webhooks/" + url.PathEscape(w.Name)}
	if tol := w.ToleranceOrDefault(); tol != 0 {
		v.Tolerance = tol.String()
	}
	return v
}

// createWebhook handles POST /admin/webhooks.
func (s *Server) createWebhook(c *gin.Context) {
	store, ok := s.webhooks(c)
	if !ok {
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	w, err := webhookConfig(raw)
	if err != nil {
		s.fail(c, err)
		return
	}
	setAuditTarget(c, "webhook="+w.Name)
	s.leaderCall(c, raw, func() (int, any, error) {
		stored, err := store.CreateWebhook(c.Request.Context(), w)
		return http.StatusCreated, viewWebhook(stored), webhookError(err)
	})
}

func webhookConfig(raw []byte) (webhook.Config, error) {
	var b webhookBody
	if err := decodeObject(raw, &b); err != nil {
		return webhook.Config{}, err
	}
	w := webhook.Config{Name: b.Name, Provider: b.Provider, Secret: b.Secret, Action: b.Action, Workflow: b.Workflow,
		Signal: b.Signal, WorkflowIDPointer: b.WorkflowIDPointer, KeyPointer: b.KeyPointer, SignatureHeader: b.SignatureHeader,
		TimestampHeader: b.TimestampHeader}
	tol, err := parseDuration("tolerance", b.Tolerance)
	if err != nil {
		return w, err
	}
	if tol != nil {
		w.Tolerance = *tol
	}
	if w, err = w.WithDefaults(b.NoTimestamp); err != nil {
		return w, webhookError(err)
	}
	return w, webhookError(w.Validate())
}

// webhookError maps the webhook sentinels to their answers.
func webhookError(err error) error {
	switch {
	case errors.Is(err, webhook.ErrInvalidConfig):
		return badRequest(codeInvalidArgument, err.Error())
	case errors.Is(err, webhook.ErrExists):
		return &apiError{status: http.StatusConflict, code: codeConflict, msg: err.Error() + ": delete it first to change it"}
	case errors.Is(err, webhook.ErrUnknown):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: err.Error()}
	}
	return err
}

// listWebhooks handles GET /admin/webhooks: secrets redacted.
func (s *Server) listWebhooks(c *gin.Context) {
	store, ok := s.webhooks(c)
	if !ok {
		return
	}
	list, err := store.Webhooks(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]WebhookView, 0, len(list))
	for _, w := range list {
		out = append(out, viewWebhook(w))
	}
	c.JSON(http.StatusOK, gin.H{"webhooks": out})
}

// deleteWebhook handles DELETE /admin/webhooks/{name}.
func (s *Server) deleteWebhook(c *gin.Context) {
	store, ok := s.webhooks(c)
	if !ok {
		return
	}
	name := c.Param("webhook")
	if err := checkText("webhook name", name, maxNameLen, true); err != nil {
		s.fail(c, err)
		return
	}
	s.leaderCall(c, nil, func() (int, any, error) {
		err := store.DeleteWebhook(c.Request.Context(), name)
		return http.StatusOK, gin.H{"name": name, "deleted": true}, webhookError(err)
	})
}

// receiveWebhook handles POST /webhooks/{name}: it verifies the delivery
// (401 and nothing stored when the signature fails), then starts or
// signals-with-start under the key the delivery's signed parts give
// (webhook.Config.KeyFor: hv:webhook:<name>:<delivery id>, or
// hv:webhook:<name>:sha256:<body digest> for GitHub) through the normal
// keyed routes, in process, as the node's system identity: a redelivery
// is a keyed replay and answers 200 deduplicated.
func (s *Server) receiveWebhook(c *gin.Context) {
	store, ok := s.webhooks(c)
	if !ok {
		return
	}
	w, found, err := store.Webhook(c.Param("webhook"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if !found {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "no webhook " + fmt.Sprintf("%q", c.Param("webhook"))})
		return
	}
	raw, err := s.readBodyLimit(c, min(s.cfg.MaxBodyBytes, maxWebhookBody))
	if err != nil {
		s.fail(c, err)
		return
	}
	d, err := w.Verify(c.Request.Header, raw, s.now())
	if err != nil {
		s.refuseDelivery(c, err)
		return
	}
	payload, err := decodePayload(raw, "payload")
	if err != nil {
		s.fail(c, err)
		return
	}
	s.deliver(c, w, d, payload)
}

// refuseDelivery answers a delivery that failed verification: 401 for
// its signature (audited, like a refused token), 400 for its payload.
func (s *Server) refuseDelivery(c *gin.Context, err error) {
	e := badRequest(codeInvalidArgument, err.Error())
	if errors.Is(err, webhook.ErrSignature) {
		e = unauthenticated(err.Error())
		s.auditRefusal(c, c.Request.Method+" "+c.FullPath(), e)
	}
	abort(c, e)
}

// webhookAnswer is the answer to a delivery.
type webhookAnswer struct {
	Webhook        string `json:"webhook"`
	DeliveryID     string `json:"delivery_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Deduplicated   bool   `json:"deduplicated"`
	ExecutionID    string `json:"execution_id"`
	WorkflowName   string `json:"workflow_name"`
	WorkflowID     string `json:"workflow_id"`
	State          string `json:"state"`
}

// deliver runs a verified delivery's action: 201 when it started a run or
// delivered a signal, 200 deduplicated for a redelivery, or the action's
// own error answer.
func (s *Server) deliver(c *gin.Context, w webhook.Config, d webhook.Delivery, payload json.RawMessage) {
	key := d.Key
	name := url.PathEscape(w.Workflow)
	var path string
	body := map[string]any{"input": payload}
	if d.WorkflowID != "" {
		body["workflow_id"] = d.WorkflowID
	}
	if w.Action == webhook.ActionStart {
		path = "/workflows/" + name + "/start"
	} else {
		path = "/workflows/" + name + "/signal-with-start"
		body["signal_name"], body["signal_payload"] = w.Signal, payload
	}
	raw, err := json.Marshal(body)
	if err != nil {
		s.fail(c, err)
		return
	}
	status, answer := s.serveSystem(c.Request.Context(), path, key, raw)
	if status/100 != 2 {
		c.Data(status, "application/json; charset=utf-8", answer)
		c.Abort()
		return
	}
	var out struct {
		webhookAnswer
		StartedFresh    *bool `json:"started_fresh"`
		SignalDelivered *bool `json:"signal_delivered"`
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		s.fail(c, fmt.Errorf("webhook action answer: %w", err))
		return
	}
	a := out.webhookAnswer
	a.Webhook, a.DeliveryID, a.IdempotencyKey = w.Name, d.ID, key
	fresh := deref(out.StartedFresh)
	if w.Action == webhook.ActionSignalWithStart {
		fresh = deref(out.SignalDelivered)
	}
	a.Deduplicated = !fresh
	status = http.StatusOK
	if fresh {
		status = http.StatusCreated
	}
	c.JSON(status, a)
}

// serveSystem serves POST path (under BasePath) with body and key in
// process as the node's system identity, through the normal routing,
// and returns its answer.
func (s *Server) serveSystem(ctx context.Context, path, key string, body []byte) (int, []byte) {
	o := &Outbound{}
	o.Bind(s)
	w, err := o.serve(ctx, path, key, body)
	if err != nil {
		return http.StatusInternalServerError, []byte(`{"error":"internal error","code":"internal"}`)
	}
	return w.status, w.body.Bytes()
}
