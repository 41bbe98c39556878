package node

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/internal/browsertest"
)

// uiTab is a headless Chromium tab on a node's web UI.
type uiTab struct {
	*browsertest.Browser
	t   *testing.T
	url string
}

func newUITab(t *testing.T, n *Node) *uiTab {
	u := &uiTab{Browser: browsertest.New(t), t: t, url: "http://" + n.Addr() + "/ui/"}
	u.Do(laptop)
	return u
}

// in reports failures to t (a subtest) from now on.
func (u *uiTab) in(t *testing.T) {
	u.t = t
	u.Use(t)
}

// signIn loads the page afresh (the token lives in the page's memory, so
// this signs the previous token out) and signs in with token.
func (u *uiTab) signIn(token string) {
	u.t.Helper()
	u.Do(chromedp.Navigate(u.url), chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), token), chromedp.Click(chromedp.CSS(`form button[type=submit]`)))
	u.WaitFor("signed in", `!document.getElementById('nav').hidden`)
}

// open shows a page of the UI by its hash route.
func (u *uiTab) open(hash string) {
	u.t.Helper()
	browsertest.Eval[string](u.Browser, fmt.Sprintf(`location.hash = %q`, hash))
}

// count is how many elements match a CSS selector.
func (u *uiTab) count(sel string) int {
	u.t.Helper()
	return browsertest.Eval[int](u.Browser, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// buttons counts the buttons whose text is label.
func (u *uiTab) buttons(label string) int {
	u.t.Helper()
	return browsertest.Eval[int](u.Browser, fmt.Sprintf(`[...document.querySelectorAll('button')].filter(b => b.textContent.trim() === %q).length`, label))
}

// click clicks the button whose text is label, found and clicked in one
// step in the page: the live run page re-renders its actions as events
// arrive, and a button looked up first could be replaced before a
// mouse click reached it (CI lost a Terminate click so).
func (u *uiTab) click(label string) {
	u.t.Helper()
	require.True(u.t, browsertest.Eval[bool](u.Browser, fmt.Sprintf(
		`(b => !!b && (b.click(), true))([...document.querySelectorAll('button')].find(b => b.textContent.trim() === %q))`, label)),
		"no button %q", label)
}

// follow clicks the link sel finds, in one step in the page (a refresh
// of the section may replace the element between a lookup and a click).
func (u *uiTab) follow(sel string) {
	u.t.Helper()
	browsertest.Eval[bool](u.Browser, fmt.Sprintf(`(document.querySelector(%q).click(), true)`, sel))
}

// text is the page's visible text.
func (u *uiTab) text() string {
	u.t.Helper()
	return browsertest.Eval[string](u.Browser, `document.body.innerText`)
}

// laptop is the viewport of the tests and of the laptop screenshots.
var laptop = chromedp.EmulateViewport(1280, 900)

// checkPage screenshots the page at a laptop's and a phone's size and
// checks it: not blank, no sideways scrolling on the phone, a name for
// every control.
func (u *uiTab) checkPage(name string) {
	u.t.Helper()
	u.RequireAccessibleNames(name)
	u.Screenshot(name)
	u.Do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	u.RequireNoHorizontalScroll(name + " at 390×844")
	u.Screenshot(name + "-phone")
	u.Do(laptop)
}

// mintToken creates a token of scope through n.
func mintToken(t *testing.T, n *Node, admin, scope string) string {
	t.Helper()
	r := authed(t, n, admin, "POST", "/admin/tokens", map[string]any{"scope": scope, "name": "ui-" + scope})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	return r.Body["token"].(string)
}

// startRun starts workflow name as wfID (key "start-"+wfID) through n and
// returns its id.
func startRun(t *testing.T, n *Node, token, name, wfID string, input any) string {
	t.Helper()
	r := authed(t, n, token, "POST", "/workflows/"+name+"/start", map[string]any{"workflow_id": wfID, "input": input,
		"idempotency_key": "start-" + wfID})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	return r.Body["execution_id"].(string)
}

func startOrder(t *testing.T, n *Node, token, wfID string) string {
	return startRun(t, n, token, demo.OrderName, wfID, map[string]any{"order_id": wfID, "amount_cents": 1200, "customer_id": "c-1", "sleep_ms": 10})
}

// signalEvents counts a run's SignalReceived events in its history.
func (c *cluster) signalEvents(t *testing.T, execID string) int {
	n := 0
	for _, typ := range c.eventTypes(t, execID) {
		if typ == "SignalReceived" {
			n++
		}
	}
	return n
}

// TestUIOnANode drives the web UI of a real node (raft catalog, tokens
// on) in headless Chromium: sign-in, the runs list with filters and
// paging, a run's timeline updated live, and the actions each scope gets.
func TestUIOnANode(t *testing.T) {
	c, admin := newAuthCluster(t, 1, 1)
	n := c.nodes[0]
	u := newUITab(t, n)
	read, write := mintToken(t, n, admin, "read"), mintToken(t, n, admin, "write")
	orders := make([]string, 3)
	for i := range orders {
		orders[i] = startOrder(t, n, admin, "ui-order-"+strconv.Itoa(i))
	}
	for i := range 21 {
		startRun(t, n, admin, demo.NoopChainName, fmt.Sprintf("ui-noop-%02d", i), map[string]any{"activities": 0})
	}

	t.Run("SignIn", func(t *testing.T) {
		u.in(t)
		u.Do(chromedp.Navigate(u.url), chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)))
		u.checkPage("signin")
		u.signIn(read)
		require.Contains(t, u.text(), "Scope: read")
	})
	t.Run("RunsListFiltersAndPages", func(t *testing.T) {
		u.in(t)
		u.open("#/runs")
		u.WaitFor("a full first page", `document.querySelectorAll('tbody tr a').length === 20`)
		require.Contains(t, u.text(), "ui-noop-20", "newest first")
		u.click("Next page")
		u.WaitFor("the second page", `document.body.innerText.includes('Page 2')`)
		require.Equal(t, 4, u.count(`tbody tr a`), "24 runs: 20 + 4")
		require.Contains(t, u.text(), "ui-order-0")
		u.click("Previous page")
		u.WaitFor("the first page again", `document.body.innerText.includes('Page 1') && document.body.innerText.includes('ui-noop-20')`)

		u.Do(chromedp.SetValue(chromedp.CSS(`select[name=state]`), "RUNNING"), chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
		u.WaitFor("running runs only", `document.querySelectorAll('tbody tr a').length === 3`)
		require.NotContains(t, u.text(), "ui-noop-")
		u.open("#/runs?workflow_id=ui-order-1")
		u.WaitFor("one run", `document.querySelectorAll('tbody tr a').length === 1 && document.body.innerText.includes('ui-order-1')`)
		require.Equal(t, "ui-order-1", browsertest.Eval[string](u.Browser, `document.querySelector('input[name=workflow_id]').value`))
		u.open("#/runs")
		u.WaitFor("the list", `document.querySelectorAll('tbody tr a').length === 20`)
		u.checkPage("runs")
	})
	t.Run("RunsStartedRangeAndCounts", func(t *testing.T) {
		u.in(t)
		l := authed(t, n, read, "GET", "/workflows?workflow_id=ui-noop-00", nil)
		require.Len(t, l.Body["workflows"], 1, "%v", l.Body)
		pivot := l.Body["workflows"].([]any)[0].(map[string]any)["created_at"].(string)
		countOf := func(state string) string {
			return fmt.Sprintf(`(document.querySelector('#counts [data-state=%s] .n') || {}).textContent`, state)
		}
		u.open("#/runs?started_before=" + pivot)
		u.WaitFor("the orders, started before the first noop run", `document.querySelectorAll('tbody tr a').length === 3 && !!document.querySelector('#counts [data-state=ALL]')`)
		require.NotContains(t, u.text(), "ui-noop-")
		require.Equal(t, "3", browsertest.Eval[string](u.Browser, countOf("ALL")))
		require.Equal(t, "3", browsertest.Eval[string](u.Browser, countOf("RUNNING")))
		require.Zero(t, u.count(`#counts [data-state=COMPLETED]`), "states without runs are left out")
		require.NotEmpty(t, browsertest.Eval[string](u.Browser, `document.querySelector('input[name=started_before]').value`), "the filter is shown")

		u.open("#/runs?state=COMPLETED&started_after=" + pivot)
		u.WaitFor("the noop runs, from the first one on", `document.querySelectorAll('tbody tr a').length === 20 && document.body.innerText.includes('ui-noop-00') === false`)
		require.Equal(t, "21", browsertest.Eval[string](u.Browser, countOf("COMPLETED")), "counts set the state filter aside")
		require.Equal(t, "21", browsertest.Eval[string](u.Browser, countOf("ALL")), "the orders started before the range")
		u.click("Next page")
		u.WaitFor("the 21st, ui-noop-00 (after is inclusive)", `document.body.innerText.includes('Page 2') && document.querySelectorAll('tbody tr a').length === 1 &&
			document.body.innerText.includes('ui-noop-00')`)
		require.Equal(t, "21", browsertest.Eval[string](u.Browser, countOf("COMPLETED")), "the counts stay while paging")

		u.open("#/runs")
		u.WaitFor("the filter form", `!!document.querySelector('input[name=started_after]')`)
		u.Do(chromedp.SetValue(chromedp.CSS(`input[name=started_after]`), "2099-01-02T03:04:05"), chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
		u.WaitFor("no run started after 2099", `location.hash.includes('started_after=2099-01-0') && document.querySelector('tbody td.muted') !== null &&
			(document.querySelector('#counts [data-state=ALL] .n') || {}).textContent === '0'`)
		require.Regexp(t, `started_after=2099-01-0[12]T\d\d%3A04%3A05\.000Z`, browsertest.Eval[string](u.Browser, `location.hash`), "an RFC 3339 instant in the address")

		u.open("#/runs?started_after=yesterday")
		u.WaitFor("the page's refusal", `!!document.querySelector('[role=alert]') && document.querySelector('[role=alert]').innerText.includes('started_after "yesterday" is not a date')`)
	})
	t.Run("RunTimelineIsLive", func(t *testing.T) {
		u.in(t)
		id := orders[0]
		u.open("#/runs/" + id)
		u.WaitFor("the summary and the charge activity with its key", `!!document.querySelector('#run-title') && !!document.querySelector('li.group[data-activity-id]') &&
			document.querySelector('li.group').innerText.includes('charge_card') && document.querySelector('li.group').innerText.includes('key')`)
		require.Contains(t, u.text(), id, "the page shows the execution id")
		require.Contains(t, u.text(), "ui-order-0")
		require.Contains(t, u.text(), "start-ui-order-0", "the start key")
		require.Zero(t, u.count(`li[data-type=SignalReceived]`))
		r := authed(t, n, write, "POST", "/workflows/"+id+"/signal/"+demo.ApprovedSignal, map[string]any{"by": "ops"})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		u.WaitFor("the signal, live", `!!document.querySelector('li[data-type=SignalReceived]')`)
		u.WaitFor("the close, live", `!!document.querySelector('li[data-type=WorkflowCompleted]') && document.getElementById('live').innerText.includes('Run closed')`)
		u.WaitFor("the summary refreshed", `document.querySelector('.facts .badge').textContent === 'COMPLETED'`)
		u.checkPage("run")
	})
	t.Run("ContinueAsNewChain", func(t *testing.T) {
		u.in(t)
		id := startRun(t, n, admin, demo.CounterName, "ui-counter", demo.CounterInput{Every: 1, Until: 2})
		u.open("#/runs/" + id)
		u.WaitFor("the run", `!!document.querySelector('li[data-type=WorkflowStarted]')`)
		r := authed(t, n, write, "POST", "/workflows/"+id+"/signal/"+demo.CounterAddSignal, map[string]any{"id": "a", "n": 1})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		u.WaitFor("the link to the successor, live", `!!document.querySelector('#live a')`)
		next := browsertest.Eval[string](u.Browser, `document.querySelector('#live a').textContent`)
		require.NotEqual(t, id, next)
		u.Do(chromedp.Click(chromedp.CSS(`#live a`)))
		u.WaitFor("the successor's page links back", fmt.Sprintf(`[...document.querySelectorAll('.facts a')].some(a => a.textContent === %q) &&
			document.body.innerText.includes(%q)`, id, next))
	})
	t.Run("ReadTokenSeesNoMutatingControl", func(t *testing.T) {
		u.in(t)
		u.open("#/runs/" + orders[1])
		u.WaitFor("the run", `document.body.innerText.includes('ui-order-1') && !!document.querySelector('li.group')`)
		for _, label := range []string{"Send signal", "Cancel run", "Terminate run", "Reset run"} {
			require.Zero(t, u.buttons(label), label)
		}
		require.Zero(t, u.count(`form.signal`))
	})
	t.Run("KeyedSignalTwiceDeliveredOnce", func(t *testing.T) {
		u.in(t)
		u.signIn(write)
		id := orders[1]
		u.open("#/runs/" + id)
		u.WaitFor("the signal form", `!!document.querySelector('form.signal')`)
		require.Zero(t, u.buttons("Terminate run"), "write scope: no terminate")
		require.Zero(t, u.buttons("Reset run"), "write scope: no reset")
		require.Equal(t, 1, u.buttons("Cancel run"))
		u.Do(chromedp.SendKeys(chromedp.CSS(`input[name=signal_name]`), demo.ApprovedSignal),
			chromedp.SendKeys(chromedp.CSS(`textarea[name=payload]`), `{"by": "ui"}`),
			chromedp.SendKeys(chromedp.CSS(`input[name=idempotency_key]`), "approve-once"))
		u.click("Send signal")
		u.WaitFor("delivered", `!!document.querySelector('[data-outcome=delivered]')`)
		u.click("Send signal")
		u.WaitFor("deduplicated", `!!document.querySelector('[data-outcome=deduplicated]')`)
		require.Equal(t, 1, u.count(`[data-outcome=delivered]`))
		require.Equal(t, 1, c.signalEvents(t, id), "one SignalReceived")
		u.WaitFor("the signal's key in the run's signals", `[...document.querySelectorAll('table')].some(t => t.innerText.includes('approve-once'))`)
	})
	t.Run("TerminateWithAdmin", func(t *testing.T) {
		u.in(t)
		u.signIn(admin)
		id := orders[2]
		u.open("#/runs/" + id)
		u.WaitFor("the terminate button", `[...document.querySelectorAll('button')].some(b => b.textContent.trim() === 'Terminate run')`)
		u.click("Terminate run")
		u.WaitFor("the confirmation", `document.getElementById('confirm').open`)
		u.Do(chromedp.SendKeys(chromedp.CSS(`#confirm input[name=reason]`), "ui test"), chromedp.Click(chromedp.CSS(`#confirm-ok`)))
		u.WaitFor("terminated", `!!document.querySelector('[data-outcome=terminate]')`)
		u.WaitFor("the close, live", `!!document.querySelector('li[data-type=WorkflowTerminated]')`)
		types := c.eventTypes(t, id)
		require.Equal(t, "WorkflowTerminated", types[len(types)-1])
	})
	t.Run("ResetWithAdminToAPickedEvent", func(t *testing.T) {
		u.in(t)
		u.signIn(admin)
		id := startOrder(t, n, admin, "ui-order-reset")
		u.open("#/runs/" + id)
		u.WaitFor("the charge", `!!document.querySelector('li[data-type=TimerStarted]')`)
		u.click("Reset run")
		u.WaitFor("the confirmation", `document.getElementById('confirm').open && !!document.querySelector('#confirm select[name=point] option[value="2"]')`)
		u.checkPage("reset")
		u.Do(chromedp.SetValue(chromedp.CSS(`#confirm select[name=point]`), "2"), chromedp.SendKeys(chromedp.CSS(`#confirm input[name=reason]`), "ui reset"),
			chromedp.Click(chromedp.CSS(`#confirm-ok`)))
		u.WaitFor("reset", `!!document.querySelector('[data-outcome=reset] a')`)
		next := browsertest.Eval[string](u.Browser, `document.querySelector('[data-outcome=reset] a').textContent`)
		old := c.eventTypes(t, id)
		require.Equal(t, "WorkflowTerminated", old[len(old)-1])
		types := c.eventTypes(t, next)
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted"}, types[:3], "events 0..2 replayed")
		require.Equal(t, 1, count(types, "ActivityScheduled"), "the charge before the point is not run again")
		u.follow(`[data-outcome=reset] a`)
		u.WaitFor("the new run's page", fmt.Sprintf(`document.body.innerText.includes(%q) && !!document.querySelector('li[data-type=TimerStarted]')`, next))
	})
	t.Run("FlowPage", func(t *testing.T) {
		u.in(t)
		for i := range demo.ReportMaxRunning + 1 {
			startRun(t, n, admin, demo.ReportName, fmt.Sprintf("ui-report-%d", i), map[string]any{"customer": "ui-flow", "sleep_ms": 3_600_000})
		}
		u.open("#/flow")
		u.WaitFor("the customer's key: its limit full, one queued", `(() => {
			const row = document.querySelector('[data-flow-key="report/ui-flow"]');
			return !!row && row.innerText.includes('2 of 2') && row.lastElementChild.textContent === '1';
		})()`)
		text := u.text()
		require.Contains(t, text, demo.RenderReportName, "the activity limits")
		u.checkPage("flow")
	})
	require.Empty(t, u.ConsoleErrors(), "console errors: %s", strings.Join(u.ConsoleErrors(), "; "))
}

// entryFor picks a node that does not own shard: the UI on it reads the
// shard's runs through forwarding.
func (c *cluster) entryFor(t *testing.T, shard uint16) *Node {
	t.Helper()
	for _, n := range c.nodes {
		if !slices.Contains(n.Owned(), shard) {
			return n
		}
	}
	t.Fatalf("every node owns shard %d", shard)
	return nil
}

// shardState reads a shard's catalog state through n.
func shardState(t *testing.T, n *Node, admin string, shard int) string {
	t.Helper()
	r := authed(t, n, admin, "GET", "/admin/shards/"+strconv.Itoa(shard), nil)
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	return r.Body["state"].(string)
}

// TestUIOnACluster drives the web UI of a 3-node cluster (raft catalog,
// two shards, tokens on): a run served by another node, live through the
// forwarded event stream; the cluster page's members, peers, shards and
// gates; a drain (its safety check shown first) and an undrain.
func TestUIOnACluster(t *testing.T) {
	c, admin := newAuthCluster(t, 3, 2)
	id := startOrder(t, c.nodes[0], admin, "ui-cluster-order")
	entry := c.entryFor(t, shardOf(t, id))
	u := newUITab(t, entry)
	u.signIn(admin)

	t.Run("RunThroughANonOwner", func(t *testing.T) {
		u.in(t)
		u.open("#/runs")
		u.WaitFor("the run in the cluster-wide list", `document.body.innerText.includes('ui-cluster-order')`)
		u.open("#/runs/" + id)
		u.WaitFor("the charge activity", `!!document.querySelector('li.group[data-activity-id]')`)
		r := authed(t, c.nodes[0], admin, "POST", "/workflows/"+id+"/signal/"+demo.ApprovedSignal, map[string]any{"by": "ops"})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		u.WaitFor("the close, live through the forwarded stream", `!!document.querySelector('li[data-type=WorkflowCompleted]')`)
	})
	t.Run("ParentAndChildren", func(t *testing.T) {
		u.in(t)
		parent := startRun(t, c.nodes[0], admin, demo.ParentChainName, "ui-parent", demo.ParentChainInput{Children: 2, Activities: 1})
		u.open("#/runs/" + parent)
		u.WaitFor("both children, closed, with links", `document.querySelectorAll('#children tr[data-child]').length === 2 &&
			[...document.querySelectorAll('#children tr[data-child]')].every(r => r.innerText.includes('COMPLETED') && !!r.querySelector('a'))`)
		first := fmt.Sprintf(`#children tr[data-child=%q] a`, parent+"-1")
		require.Equal(t, 1, u.count(first), "the children's workflow ids are the parent's execution id and the command")
		child := browsertest.Eval[string](u.Browser, fmt.Sprintf(`document.querySelector(%q).getAttribute('href')`, first))
		u.follow(first)
		u.WaitFor("the child's page links to its parent", fmt.Sprintf(`location.hash === %q && !!document.querySelector('#parent a') &&
			document.querySelector('#parent a').textContent === %q`, child, parent))
		require.Zero(t, u.count(`#children tr`), "the child has no children")
		u.follow(`#parent a`)
		u.WaitFor("back on the parent", fmt.Sprintf(`location.hash === %q && document.querySelectorAll('#children tr[data-child]').length === 2`, "#/runs/"+parent))
		require.Zero(t, u.count(`#parent`), "a run started by a client has no parent")
	})
	t.Run("ClusterPage", func(t *testing.T) {
		u.in(t)
		u.open("#/cluster")
		u.WaitFor("members, peers and shards", `[...document.querySelectorAll('caption')].some(c => c.textContent === 'Gossip members') &&
			document.querySelectorAll('[data-shard]').length === 2 && document.body.innerText.includes('LEADER')`)
		text := u.text()
		for _, n := range c.nodes {
			require.Contains(t, text, n.NodeID())
		}
		u.checkPage("cluster")
	})
	t.Run("DrainAndUndrain", func(t *testing.T) {
		u.in(t)
		u.click("Drain shard 1")
		u.WaitFor("the safety check", `document.getElementById('confirm').open && document.getElementById('confirm').innerText.includes('Safety check passed')`)
		require.Contains(t, browsertest.Eval[string](u.Browser, `document.getElementById('confirm').innerText`), "Start claims inside the window")
		u.Do(chromedp.Click(chromedp.CSS(`#confirm-ok`)))
		u.WaitFor("draining, with its progress", `!!document.querySelector('[data-outcome=drained]') && !!document.querySelector('[data-shard="1"] progress')`)
		// The page's node answered; node 0 applies the catalog entry a moment later.
		eventually(t, "shard 1 draining", 5*time.Second, func() bool { return shardState(t, c.nodes[0], admin, 1) == "draining" })
		u.WaitFor("the undrain button", `[...document.querySelectorAll('button')].some(b => b.textContent.trim() === 'Undrain shard 1')`)
		u.click("Undrain shard 1")
		u.WaitFor("undrained", `!!document.querySelector('[data-outcome=undrained]')`)
		eventually(t, "shard 1 writable again", 5*time.Second, func() bool { return shardState(t, c.nodes[0], admin, 1) == "writable" })
	})
	t.Run("ForcedDrainOfTheLastWritableShard", func(t *testing.T) {
		u.in(t)
		r := authed(t, c.nodes[0], admin, "POST", "/admin/shards/1/drain", map[string]any{})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		u.WaitFor("shard 1 draining on the page", `!!document.querySelector('[data-shard="1"] progress')`)
		u.click("Drain shard 0")
		u.WaitFor("the unsafe check with its force box", `document.getElementById('confirm').open && document.getElementById('confirm').innerText.includes('last writable shard') &&
			!!document.querySelector('#confirm input[name=force]')`)
		require.True(t, browsertest.Eval[bool](u.Browser, `document.getElementById('confirm-ok').disabled`), "no confirm before the force box is ticked")
		require.Equal(t, "Force drain shard 0", browsertest.Eval[string](u.Browser, `document.getElementById('confirm-ok').textContent`))
		u.RequireAccessibleNames("forced drain dialog")
		u.Do(chromedp.Click(chromedp.CSS(`#confirm input[name=force]`)))
		require.False(t, browsertest.Eval[bool](u.Browser, `document.getElementById('confirm-ok').disabled`))
		u.Do(chromedp.Click(chromedp.CSS(`#confirm-ok`)))
		u.WaitFor("forced, with the risk said", `!!document.querySelector('[data-outcome=forced]')`)
		require.Contains(t, browsertest.Eval[string](u.Browser, `document.querySelector('[data-outcome=forced]').innerText`), "forced")
		eventually(t, "shard 0 draining", 5*time.Second, func() bool { return shardState(t, c.nodes[0], admin, 0) == "draining" })
		for _, shard := range []string{"0", "1"} {
			r := authed(t, c.nodes[0], admin, "POST", "/admin/shards/"+shard+"/undrain", map[string]any{})
			require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		}
		eventually(t, "both shards writable again", 5*time.Second, func() bool {
			return shardState(t, c.nodes[0], admin, 0) == "writable" && shardState(t, c.nodes[0], admin, 1) == "writable"
		})
		u.WaitFor("the page shows them writable", `[...document.querySelectorAll('button')].filter(b => b.textContent.startsWith('Drain shard ')).length === 2`)
	})
	t.Run("Gates", func(t *testing.T) {
		u.in(t)
		u.Do(chromedp.SendKeys(chromedp.CSS(`input[name=reason]`), "ui maintenance"))
		u.click("Close gate")
		u.WaitFor("the gate listed", `!!document.querySelector('[data-outcome=gate-closed]') &&
			[...document.querySelectorAll('button')].some(b => b.textContent.startsWith('Open gate '))`)
		r := authed(t, c.nodes[0], admin, "GET", "/admin/gates", nil)
		require.Len(t, r.Body["gates"], 1)
		u.Do(chromedp.Click(chromedp.JSPath(`[...document.querySelectorAll('button')].find(b => b.textContent.startsWith('Open gate '))`)))
		u.WaitFor("the gate opened", `!!document.querySelector('[data-outcome=gate-opened]')`)
		r = authed(t, c.nodes[0], admin, "GET", "/admin/gates", nil)
		require.Empty(t, r.Body["gates"])
	})
	require.Empty(t, u.ConsoleErrors(), "console errors: %s", strings.Join(u.ConsoleErrors(), "; "))
}
