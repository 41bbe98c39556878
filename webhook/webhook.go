// Package webhook verifies provider-signed webhook deliveries and derives
// the idempotency key each delivery is started or signalled under.
//
// A Config is one receiver an admin configures: its provider (Stripe,
// GitHub or a generic HMAC-SHA256 header), its secret, and the action a
// verified delivery takes (start a workflow, or signal-with-start). Verify
// checks a delivery's signature before it reads the payload, and returns
// the delivery id the provider repeats on every redelivery, and the
// reserved key the delivery runs under, built only from signed parts
// (KeyFor): hv:webhook:<name>:<delivery id> where the id is signed
// (Stripe, generic), hv:webhook:<name>:sha256:<body digest> where it is
// not (GitHub).
//
// Secrets are kept whole (an HMAC needs them), so a Config is redacted
// (Redacted) before it is shown, and never logged.
package webhook

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Provider is who signs a receiver's deliveries.
type Provider string

// Providers.
const (
	// Stripe: Stripe-Signature "t=<unix>,v1=<hex>[,v1=<hex>…]", an
	// HMAC-SHA256 of "<t>.<body>"; the key is the event's id (/id).
	Stripe Provider = "stripe"
	// GitHub: X-Hub-Signature-256 "sha256=<hex>" of the body. The
	// X-GitHub-Delivery header is not signed, so the key is the body's
	// SHA-256 (KeyFor); the header is the reported delivery id.
	GitHub Provider = "github"
	// Generic: an HMAC-SHA256, hex (optionally "sha256=" first), in
	// SignatureHeader, of "<t>.<body>" where t is the TimestampHeader's
	// unix seconds (within Tolerance of now), or of the body alone when
	// the receiver has no TimestampHeader; the key is at KeyPointer.
	Generic Provider = "generic"
)

// Action is what a verified delivery does.
type Action string

// Actions.
const (
	// ActionStart starts Workflow with the payload as its input.
	ActionStart Action = "start"
	// ActionSignalWithStart signals Signal, with the payload, to the run
	// of Workflow holding the id at WorkflowIDPointer, starting it (the
	// payload as its input) when none runs.
	ActionSignalWithStart Action = "signal_with_start"
)

// Limits and defaults.
const (
	// ToleranceDefault is how far a signed timestamp (Stripe's, or a
	// generic receiver's TimestampHeader) may be from now (Stripe's
	// libraries use 5 minutes too).
	ToleranceDefault = 5 * time.Minute
	// TimestampHeaderDefault is the TimestampHeader a new generic
	// receiver gets (WithDefaults).
	TimestampHeaderDefault = "Webhook-Timestamp"
	// MaxTolerance bounds Config.Tolerance.
	MaxTolerance = 24 * time.Hour
	// KeyPrefix starts every key Key derives.
	KeyPrefix = "hv:webhook:"
	// RedactedSecret stands for a secret in every answer that shows a Config.
	RedactedSecret = "[redacted]"

	maxNameLen     = 128
	maxSecretLen   = 1024
	maxIdentLen    = 256
	maxPointerLen  = 512
	maxDeliveryLen = 512
	// maxTimestampLen bounds a TimestampHeader value: unix seconds stay
	// at 10 digits until 2286.
	maxTimestampLen = 12
)

// Sentinel errors of the package.
var (
	// ErrSignature: the delivery's signature is missing, malformed, wrong
	// or outside the tolerance (answered 401; nothing is stored).
	ErrSignature = errors.New("webhook signature refused")
	// ErrPayload: a verified delivery has no usable key or workflow id
	// (answered 400).
	ErrPayload = errors.New("webhook payload unusable")
	// ErrInvalidConfig: a Config field is missing or out of range.
	ErrInvalidConfig = errors.New("invalid webhook config")
	// ErrExists: a receiver of that name exists with another config.
	ErrExists = errors.New("a webhook of that name exists")
	// ErrUnknown: no receiver of that name.
	ErrUnknown = errors.New("unknown webhook")
)

// Config is one webhook receiver.
type Config struct {
	// Name names the receiver in its URL: /api/harvest/webhooks/{name}.
	// Letters, digits, '.', '_' and '-'; at most 128 bytes.
	Name     string   `json:"name"`
	Provider Provider `json:"provider"`
	// Secret is the provider's signing secret.
	Secret string `json:"secret"`
	Action Action `json:"action"`
	// Workflow is the workflow name the action starts or signals.
	Workflow string `json:"workflow"`
	// Signal is the signal name of ActionSignalWithStart.
	Signal string `json:"signal,omitempty"`
	// WorkflowIDPointer is a JSON pointer (RFC 6901) into the payload to
	// the workflow id: required by ActionSignalWithStart; for a start,
	// absent means a minted id.
	WorkflowIDPointer string `json:"workflow_id_pointer,omitempty"`
	// KeyPointer is the JSON pointer to the delivery id (Generic only).
	KeyPointer string `json:"key_pointer,omitempty"`
	// SignatureHeader names the signature's header (Generic only).
	SignatureHeader string `json:"signature_header,omitempty"`
	// TimestampHeader names the header holding the delivery's signing
	// time in unix seconds (Generic only): the signature then covers
	// "<t>.<body>" and t must be within Tolerance of now, so a captured
	// delivery cannot be replayed after the idempotency window. Empty is
	// body-only signing: receivers stored before timestamps existed have
	// none and keep working; WithDefaults gives a new receiver
	// TimestampHeaderDefault.
	TimestampHeader string `json:"timestamp_header,omitempty"`
	// Tolerance is how far a signed timestamp may be from now (Stripe, or
	// Generic with a TimestampHeader); zero is ToleranceDefault.
	Tolerance time.Duration `json:"tolerance,omitempty"`
	// CreatedAt is when the receiver was created.
	CreatedAt time.Time `json:"created_at"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Validate reports the first field that is missing or out of range.
func (c Config) Validate() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	return c.validateProvider()
}

func (c Config) validateCommon() error {
	switch {
	case c.Name == "" || len(c.Name) > maxNameLen || !nameRE.MatchString(c.Name):
		return invalid("name must be 1 to %d letters, digits, '.', '_' or '-'", maxNameLen)
	case c.Secret == "" || len(c.Secret) > maxSecretLen:
		return invalid("secret must be 1 to %d bytes", maxSecretLen)
	case !plainText(c.Workflow, maxIdentLen, true):
		return invalid("workflow must be a workflow name")
	case c.Action != ActionStart && c.Action != ActionSignalWithStart:
		return invalid("action %q: want %s or %s", c.Action, ActionStart, ActionSignalWithStart)
	case c.Action == ActionSignalWithStart && (!plainText(c.Signal, maxIdentLen, true) || c.WorkflowIDPointer == ""):
		return invalid("action %s needs a signal and a workflow_id_pointer", ActionSignalWithStart)
	case c.Action == ActionStart && c.Signal != "":
		return invalid("signal is for action %s only", ActionSignalWithStart)
	case strings.HasPrefix(c.Workflow, "hv:") || strings.HasPrefix(c.Signal, "hv:"):
		return invalid("workflow and signal names starting with \"hv:\" are reserved")
	}
	return checkPointer("workflow_id_pointer", c.WorkflowIDPointer)
}

// validateProvider checks the provider's own fields. A generic receiver
// without a TimestampHeader stays valid: receivers (and raft log
// entries) from before timestamps existed must keep validating.
func (c Config) validateProvider() error {
	if c.Provider != Generic && (c.KeyPointer != "" || c.SignatureHeader != "" || c.TimestampHeader != "") {
		return invalid("key_pointer, signature_header and timestamp_header are for provider %s only", Generic)
	}
	if !c.timestamped() && c.Tolerance != 0 {
		return invalid("tolerance is for provider %s, or %s with a timestamp_header", Stripe, Generic)
	}
	if c.Tolerance < 0 || c.Tolerance > MaxTolerance {
		return invalid("tolerance must be between 0 (the default, %s) and %s", ToleranceDefault, MaxTolerance)
	}
	switch c.Provider {
	case Stripe, GitHub:
		return nil
	case Generic:
		return c.validateGeneric()
	}
	return invalid("provider %q: want %s, %s or %s", c.Provider, Stripe, GitHub, Generic)
}

func (c Config) validateGeneric() error {
	if c.KeyPointer == "" || !headerName(c.SignatureHeader, true) {
		return invalid("provider %s needs a key_pointer and a signature_header", Generic)
	}
	if !headerName(c.TimestampHeader, false) || strings.EqualFold(c.TimestampHeader, c.SignatureHeader) {
		return invalid("timestamp_header must be a header name other than signature_header")
	}
	return checkPointer("key_pointer", c.KeyPointer)
}

// headerName: a plain header name, without spaces or colons.
func headerName(v string, required bool) bool {
	return plainText(v, maxIdentLen, required) && !strings.ContainsAny(v, " :")
}

// timestamped reports whether c's signatures cover a timestamp.
func (c Config) timestamped() bool {
	return c.Provider == Stripe || (c.Provider == Generic && c.TimestampHeader != "")
}

// WithDefaults is c as a new receiver is created: a generic receiver
// without a TimestampHeader gets TimestampHeaderDefault, unless
// noTimestamp asks for body-only signing (for senders that cannot sign
// a timestamp). noTimestamp with a TimestampHeader, or for another
// provider, is ErrInvalidConfig. Receivers already stored are never
// passed through it: they keep what they were created with.
func (c Config) WithDefaults(noTimestamp bool) (Config, error) {
	switch {
	case noTimestamp && c.TimestampHeader != "":
		return c, invalid("no_timestamp and timestamp_header exclude each other")
	case noTimestamp && c.Provider != Generic:
		return c, invalid("no_timestamp is for provider %s only (%s always signs a timestamp, %s never does)", Generic, Stripe, GitHub)
	case !noTimestamp && c.Provider == Generic && c.TimestampHeader == "":
		c.TimestampHeader = TimestampHeaderDefault
	}
	return c, nil
}

// Redacted returns c with its secret replaced by RedactedSecret.
func (c Config) Redacted() Config {
	c.Secret = RedactedSecret
	return c
}

// Same reports whether c and o configure the same receiver (CreatedAt
// aside): putting one again changes nothing.
func (c Config) Same(o Config) bool {
	c.CreatedAt, o.CreatedAt = time.Time{}, time.Time{}
	return c == o
}

// ToleranceOrDefault is Tolerance, or ToleranceDefault when it is zero;
// zero when c's signatures cover no timestamp.
func (c Config) ToleranceOrDefault() time.Duration {
	if !c.timestamped() {
		return 0
	}
	if c.Tolerance == 0 {
		return ToleranceDefault
	}
	return c.Tolerance
}

// Key is the idempotency key hv:webhook:<name>:<dedup> of the receiver;
// KeyFor says what dedup is for each provider.
func (c Config) Key(dedup string) string { return KeyPrefix + c.Name + ":" + dedup }

func checkPointer(field, p string) error {
	if p == "" {
		return nil
	}
	if len(p) > maxPointerLen || p[0] != '/' || !utf8.ValidString(p) {
		return invalid("%s must be a JSON pointer like \"/data/id\"", field)
	}
	return nil
}

// plainText: valid UTF-8 without control characters, at most max bytes.
func plainText(v string, max int, required bool) bool {
	if (v == "" && required) || len(v) > max || !utf8.ValidString(v) {
		return false
	}
	return !strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalidConfig)...)
}
