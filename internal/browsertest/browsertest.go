// Package browsertest drives a real headless Chromium from Go tests
// (chromedp): Debian's chromium, installed by the test set-up
// (scripts/lib/ensure-chromium.sh) as PostgreSQL is. A test that needs
// it fails when it is missing, unless HARVEST_BROWSER=0 opts out
// explicitly (a machine that cannot install it); HARVEST_CHROMIUM names
// another binary.
//
// A Browser records the page's console errors, uncaught exceptions and
// browser-log errors, and checks pages: not blank (Screenshot), no
// horizontal scrolling (RequireNoHorizontalScroll) and an accessible name
// for every control in Chromium's accessibility tree
// (RequireAccessibleNames).
package browsertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Env names the tests' switches.
const (
	// EnvOptOut set to 0 skips browser tests (stated in the test log).
	EnvOptOut = "HARVEST_BROWSER"
	// EnvBinary names the Chromium binary to use.
	EnvBinary = "HARVEST_CHROMIUM"
	// EnvShots names a directory screenshots are also copied to
	// (scripts/ui-screenshots.sh refreshes docs/ui from it).
	EnvShots = "HARVEST_UI_SCREENSHOTS"
)

// stepTimeout bounds one Do or Eval.
const stepTimeout = 20 * time.Second

// ErrNoChromium is the failure of a machine without the browser.
var ErrNoChromium = errors.New("no chromium binary: run scripts/lib/ensure-chromium.sh (as root: apt-get install chromium), set " +
	EnvBinary + ", or opt out with " + EnvOptOut + "=0")

// Browser is one headless Chromium tab.
type Browser struct {
	t    testing.TB
	ctx  context.Context
	mu   sync.Mutex
	errs []string
	// Shots is where Screenshot writes its files.
	Shots string
}

// find locates the browser binary.
func find() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// New starts a browser for t (stopped at cleanup), or skips t when the
// opt-out is set; a missing browser fails t.
func New(t testing.TB) *Browser {
	t.Helper()
	if os.Getenv(EnvOptOut) == "0" {
		t.Skip(EnvOptOut + "=0: browser tests opted out")
	}
	path, err := find()
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &Browser{t: t, ctx: ctx, Shots: t.TempDir()}
	b.watchConsole()
	return b
}

// watchConsole records every error the page reports.
func (b *Browser) watchConsole() {
	messages := chromedp.Console(b.ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !unavailable(m.String()) {
				b.mu.Lock()
				b.errs = append(b.errs, m.String()+" at "+m.URL)
				b.mu.Unlock()
			}
		}
	}()
}

// unavailable is Chromium's log line of a request answered 503: a node
// briefly unable to serve (its token table trailing a catalog change, an
// owner moving), which the page's API client sends again (api.js call).
// It is not the page's error; a page that cannot recover shows one.
func unavailable(msg string) bool {
	return strings.Contains(msg, "Failed to load resource: the server responded with a status of 503")
}

// Do runs steps, failing the test on an error.
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, steps...))
}

// Eval evaluates a JavaScript expression in the page (with
// chromedp.EvalAwaitPromise among opts, the value a promise resolves to).
func Eval[T any](b *Browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	require.NoError(b.t, err, "evaluate %s", expr)
	return v
}

// WaitFor polls a JavaScript condition until it holds (stepTimeout).
func (b *Browser) WaitFor(what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		b.t.Fatalf("waiting for %s (%s): %v; the page shows:\n%s", what, cond, err, Eval[string](b, `document.body.innerText.slice(0, 4000)`))
	}
}

// Use makes t (a subtest) the test that failures are reported to.
func (b *Browser) Use(t testing.TB) { b.t = t }

// ConsoleErrors are the errors the page reported so far.
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// RequireNoConsoleErrors fails the test if the page reported an error.
func (b *Browser) RequireNoConsoleErrors() {
	b.t.Helper()
	require.Empty(b.t, b.ConsoleErrors(), "console errors")
}
