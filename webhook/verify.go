package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers the providers sign with.
const (
	StripeSignatureHeader = "Stripe-Signature"
	GitHubSignatureHeader = "X-Hub-Signature-256"
	GitHubDeliveryHeader  = "X-GitHub-Delivery"
)

// Delivery is what a verified delivery carries.
type Delivery struct {
	// ID is the provider's delivery id: the same on every redelivery.
	ID string
	// WorkflowID is the value at WorkflowIDPointer ("" without one).
	WorkflowID string
	// Key is the idempotency key the delivery is started or signalled
	// under, always derived from what the signature covers (KeyFor).
	Key string
}

// BodyDigestPrefix starts the dedup part of a key derived from the body
// (GitHub's): hv:webhook:<name>:sha256:<hex SHA-256 of the raw body>.
const BodyDigestPrefix = "sha256:"

// KeyFor is the idempotency key of delivery d of c, built only from what
// the signature covers, so that no one without the secret can mint a new
// key for a captured delivery. Stripe signs "<t>.<body>" and the id is
// the body's /id; the generic provider signs the body (and the
// timestamp, when it has one) and the id is at KeyPointer: for both the
// id is signed and is the key. GitHub signs the body only and its
// X-GitHub-Delivery header is not signed: its key is the body's digest
// (a redelivery sends the same body), and the header is only reported.
func (c Config) KeyFor(d Delivery, body []byte) string {
	if c.Provider == GitHub {
		sum := sha256.Sum256(body)
		return c.Key(BodyDigestPrefix + hex.EncodeToString(sum[:]))
	}
	return c.Key(d.ID)
}

// Verify checks a delivery of c (its headers and raw body, at now): the
// signature first (ErrSignature), then the payload (ErrPayload).
func (c Config) Verify(h http.Header, body []byte, now time.Time) (Delivery, error) {
	if err := c.verifySignature(h, body, now); err != nil {
		return Delivery{}, err
	}
	d, err := c.delivery(h, body)
	if err != nil {
		return d, err
	}
	d.Key = c.KeyFor(d, body)
	return d, nil
}

func (c Config) verifySignature(h http.Header, body []byte, now time.Time) error {
	switch c.Provider {
	case Stripe:
		return verifyStripe(c.Secret, h.Get(StripeSignatureHeader), body, now, c.ToleranceOrDefault())
	case GitHub:
		return verifyPrefixedHex(c.Secret, GitHubSignatureHeader, h.Get(GitHubSignatureHeader), body, true)
	case Generic:
		if c.TimestampHeader != "" {
			return c.verifyTimestamped(h, body, now)
		}
		return verifyPrefixedHex(c.Secret, c.SignatureHeader, h.Get(c.SignatureHeader), body, false)
	}
	return fmt.Errorf("provider %q: %w", c.Provider, ErrSignature)
}

// sign is the HMAC-SHA256 of the parts under secret.
func sign(secret string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// verifyStripe checks a Stripe-Signature header: any of its v1
// signatures may match (Stripe sends two while a secret rolls), and its
// timestamp must be within tolerance of now, either way.
func verifyStripe(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if header == "" {
		return fmt.Errorf("no %s header: %w", StripeSignatureHeader, ErrSignature)
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%s needs t= and a v1= signature: %w", StripeSignatureHeader, ErrSignature)
	}
	want := sign(secret, []byte(ts), []byte("."), body)
	if !anyEqual(want, sigs) {
		return fmt.Errorf("no v1 signature matches: %w", ErrSignature)
	}
	return checkTolerance(unix, now, tolerance)
}

// checkTolerance refuses a signed unix time more than tolerance from
// now, either way.
func checkTolerance(unix int64, now time.Time, tolerance time.Duration) error {
	if skew := now.Sub(time.Unix(unix, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("signature timestamp is %s from now, over the tolerance of %s: %w", skew.Round(time.Second), tolerance, ErrSignature)
	}
	return nil
}

// verifyTimestamped checks a generic delivery whose signature covers
// "<t>.<body>", t being the TimestampHeader's unix seconds (sent as is,
// 1 to 12 digits), within the tolerance of now.
func (c Config) verifyTimestamped(h http.Header, body []byte, now time.Time) error {
	ts := h.Get(c.TimestampHeader)
	if ts == "" {
		return fmt.Errorf("no %s header: %w", c.TimestampHeader, ErrSignature)
	}
	unix, err := parseUnix(ts)
	if err != nil {
		return fmt.Errorf("%s: %w", c.TimestampHeader, err)
	}
	signed := make([]byte, 0, len(ts)+1+len(body))
	signed = append(append(append(signed, ts...), '.'), body...)
	if err := verifyPrefixedHex(c.Secret, c.SignatureHeader, h.Get(c.SignatureHeader), signed, false); err != nil {
		return err
	}
	return checkTolerance(unix, now, c.ToleranceOrDefault())
}

// parseUnix reads unix seconds: 1 to maxTimestampLen ASCII digits, no
// sign or space (the text is signed as sent, so there is one spelling).
func parseUnix(ts string) (int64, error) {
	if len(ts) > maxTimestampLen || strings.TrimLeft(ts, "0123456789") != "" {
		return 0, fmt.Errorf("want unix seconds, 1 to %d digits: %w", maxTimestampLen, ErrSignature)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want unix seconds: %w", ErrSignature)
	}
	return unix, nil
}

func anyEqual(want []byte, sigs [][]byte) bool {
	ok := false
	for _, s := range sigs {
		ok = hmac.Equal(want, s) || ok // compare every one: no early exit
	}
	return ok
}

// verifyPrefixedHex checks an HMAC-SHA256 of body in hex, with "sha256="
// first (required when needPrefix).
func verifyPrefixedHex(secret, name, value string, body []byte, needPrefix bool) error {
	if value == "" {
		return fmt.Errorf("no %s header: %w", name, ErrSignature)
	}
	hexSig, had := strings.CutPrefix(strings.TrimSpace(value), "sha256=")
	if needPrefix && !had {
		return fmt.Errorf("%s must start with sha256=: %w", name, ErrSignature)
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil || !hmac.Equal(sign(secret, body), sig) {
		return fmt.Errorf("%s does not match: %w", name, ErrSignature)
	}
	return nil
}

// delivery reads a verified delivery's id and workflow id.
func (c Config) delivery(h http.Header, body []byte) (Delivery, error) {
	var d Delivery
	var doc any
	parsed := false
	parse := func() (any, error) {
		if parsed {
			return doc, nil
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil || dec.More() {
			return nil, fmt.Errorf("the payload is not one JSON value: %w", ErrPayload)
		}
		parsed = true
		return doc, nil
	}
	var err error
	switch c.Provider {
	case GitHub:
		d.ID = strings.TrimSpace(h.Get(GitHubDeliveryHeader))
		if d.ID == "" {
			return d, fmt.Errorf("no %s header: %w", GitHubDeliveryHeader, ErrPayload)
		}
	case Stripe:
		d.ID, err = pointerText(parse, "/id")
	default:
		d.ID, err = pointerText(parse, c.KeyPointer)
	}
	if err != nil {
		return d, err
	}
	if !plainText(d.ID, maxDeliveryLen, true) {
		return d, fmt.Errorf("the delivery id must be 1 to %d bytes of text: %w", maxDeliveryLen, ErrPayload)
	}
	if c.WorkflowIDPointer != "" {
		if d.WorkflowID, err = pointerText(parse, c.WorkflowIDPointer); err != nil {
			return d, err
		}
		if !plainText(d.WorkflowID, 1024, true) {
			return d, fmt.Errorf("the workflow id at %s must be 1 to 1024 bytes of text: %w", c.WorkflowIDPointer, ErrPayload)
		}
	}
	return d, nil
}

// pointerText is the string or number at pointer p of the parsed payload.
func pointerText(parse func() (any, error), p string) (string, error) {
	doc, err := parse()
	if err != nil {
		return "", err
	}
	v, ok := Lookup(doc, p)
	switch x := v.(type) {
	case string:
		if ok && x != "" {
			return x, nil
		}
	case json.Number:
		return x.String(), nil
	}
	return "", fmt.Errorf("no string or number at %s in the payload: %w", p, ErrPayload)
}

// Lookup resolves JSON pointer p (RFC 6901) in doc, a value decoded by
// encoding/json; ok is false when p names nothing.
func Lookup(doc any, p string) (any, bool) {
	if p == "" {
		return doc, true
	}
	if p[0] != '/' {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
