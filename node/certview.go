package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/membership"
)

// Timing of certView's checks.
const (
	certCheckTimeout = 2 * time.Second
	certRetry        = 500 * time.Millisecond // while a member is untrusted
	certRecheck      = 30 * time.Second       // every trusted member again (an expired certificate)
)

// certView is the gossip view of a node with TLS. Gossip carries no
// certificate: a member with the cluster key but a certificate of another
// CA, or an expired one, would otherwise own shards on the ring, be sent
// requests no node can forward to it, and be added to raft. So a member
// counts as alive only once this node's TLS handshake with its API
// address verified its certificate, as every forwarded request would;
// until then, and after a handshake refuses it, it is StateUntrusted. A
// handshake that fails for want of an answer (a paused or cut-off node)
// changes nothing: gossip decides about members that do not answer.
type certView struct {
	inner view
	self  string
	check func(ctx context.Context, addr string) error
	log   zerolog.Logger

	mu      sync.Mutex
	trusted map[string]string // node id -> the API address its certificate verified at
	changed chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

func newCertView(inner view, self string, client *tls.Config, log zerolog.Logger) *certView {
	return &certView{inner: inner, self: self, check: handshake(client), log: log,
		trusted: map[string]string{}, changed: make(chan struct{}, 1)}
}

// handshake dials addr and completes a TLS handshake with client.
func handshake(client *tls.Config) func(ctx context.Context, addr string) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: certCheckTimeout}, Config: client}
	return func(ctx context.Context, addr string) error {
		ctx, cancel := context.WithTimeout(ctx, certCheckTimeout)
		defer cancel()
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
}

// Alive is gossip's alive members whose certificate this node trusts.
func (v *certView) Alive() []membership.Member {
	var out []membership.Member
	for _, m := range v.Members() {
		if m.State == membership.StateAlive {
			out = append(out, m)
		}
	}
	return out
}

// Members is gossip's members, an alive one untrusted until its
// certificate verified.
func (v *certView) Members() []membership.Member {
	ms := v.inner.Members()
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, m := range ms {
		if m.State == membership.StateAlive && !v.trustedLocked(m) {
			ms[i].State = membership.StateUntrusted
		}
	}
	return ms
}

func (v *certView) trustedLocked(m membership.Member) bool {
	return m.NodeID == v.self || (m.APIAddr != "" && v.trusted[m.NodeID] == m.APIAddr)
}

func (v *certView) Changed() <-chan struct{} { return v.changed }

// Start checks the members now, on every gossip change and on a timer.
func (v *certView) Start(ctx context.Context) {
	ctx, v.cancel = context.WithCancel(ctx)
	v.done = make(chan struct{})
	go v.run(ctx)
}

// Stop ends the checks and waits for them.
func (v *certView) Stop() {
	if v.cancel != nil {
		v.cancel()
		<-v.done
	}
}

func (v *certView) run(ctx context.Context) {
	defer close(v.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		gossip := false
		select {
		case <-ctx.Done():
			return
		case <-v.inner.Changed():
			gossip = true
		case <-timer.C:
		}
		moved, untrusted := v.checkAll(ctx)
		if gossip || moved {
			v.nudge()
		}
		timer.Reset(map[bool]time.Duration{false: certRecheck, true: certRetry}[untrusted])
	}
}

func (v *certView) nudge() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// checkAll hands every alive member but this node to check at once and
// records the verdicts: moved says the trusted set changed, untrusted that
// a member is left untrusted.
func (v *certView) checkAll(ctx context.Context) (moved, untrusted bool) {
	var wg sync.WaitGroup
	for _, m := range v.inner.Alive() {
		if m.NodeID == v.self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mv, ok := v.checkOne(ctx, m)
			v.mu.Lock()
			moved, untrusted = moved || mv, untrusted || !ok
			v.mu.Unlock()
		}()
	}
	wg.Wait()
	return moved, untrusted
}

// checkOne checks m's certificate: it reports whether the verdict changed
// the trusted set and whether m is trusted now.
func (v *certView) checkOne(ctx context.Context, m membership.Member) (moved, ok bool) {
	err := errNoAPIAddr
	if m.APIAddr != "" {
		err = v.check(ctx, m.APIAddr)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	was := v.trustedLocked(m)
	switch {
	case err == nil:
		v.trusted[m.NodeID] = m.APIAddr
	case refusedCert(err):
		delete(v.trusted, m.NodeID)
		v.log.Warn().Err(err).Str("member_id", m.NodeID).Str("api_addr", m.APIAddr).Msg("member untrusted: its certificate was refused")
	}
	now := v.trustedLocked(m)
	return was != now, now
}

// refusedCert reports whether a handshake's error is a verdict on the
// certificates (either side's), not a network failure.
func refusedCert(err error) bool {
	var (
		unknown   x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		host      x509.HostnameError
		alert     tls.AlertError
		verify    *tls.CertificateVerificationError
		plaintext tls.RecordHeaderError
	)
	return errors.Is(err, errNoAPIAddr) || errors.As(err, &unknown) || errors.As(err, &invalid) ||
		errors.As(err, &host) || errors.As(err, &alert) || errors.As(err, &verify) || errors.As(err, &plaintext)
}
