// The run page: summary, input and outcome, pending work, signals with
// their keys, the history timeline (activities grouped with their keys
// and attempts), live through the event stream, and the actions the
// signed-in scope allows.
import { call, stream } from './api.js';
import { h, fill, json, badge, when, table, notice } from './dom.js';
import { actions } from './actions.js';
import { may } from './session.js';

export function runPage(root, id, session) {
  const ctl = new AbortController();
  const run = { id, events: [], last: -1, closed: false, signal: ctl.signal };
  const el = {
    summary: h('section', { 'aria-labelledby': 'run-title', class: 'card' }),
    live: h('p', { class: 'live', role: 'status', id: 'live' }, 'Connecting to the event stream…'),
    children: h('section', { 'aria-label': 'Child workflows', id: 'children' }),
    pending: h('section', { 'aria-label': 'Pending work' }),
    signals: h('section', { 'aria-label': 'Signals' }),
    timeline: h('section', { 'aria-labelledby': 'timeline-title' }),
  };
  run.refresh = debounce(() => describe(run, el), 250);
  fill(root, h('p', {}, h('a', { href: '#/runs' }, '← All runs')), el.summary, el.live,
    may(session, 'write') ? actions(run, session) : null, el.children, el.pending, el.signals, el.timeline);
  describe(run, el);
  follow(run, el);
  return () => ctl.abort();
}

function debounce(f, ms) {
  let t = 0;
  return () => { clearTimeout(t); t = setTimeout(f, ms); };
}

async function describe(run, el) {
  let d;
  try {
    d = await call('GET', '/workflows/' + encodeURIComponent(run.id), { signal: run.signal });
  } catch (err) {
    if (err.name !== 'AbortError') fill(el.summary, notice('Could not read the run: ' + err.message, 'error'));
    return;
  }
  run.state = d.execution.state;
  summary(el.summary, d);
  children(el.children, d.children || []);
  pending(el.pending, d);
}

function summary(root, d) {
  const x = d.execution;
  const shard = parseInt(x.execution_id.slice(0, 4), 16);
  const rows = [
    ['State', badge(x.state)], ['Workflow', x.workflow_name], ['Workflow id', mono(x.workflow_id)],
    ['Execution id', mono(x.execution_id)], ['Shard', String(shard)], ['Queue', x.queue],
    ['Start key', x.idempotency_key ? mono(x.idempotency_key) : h('span', { class: 'muted' }, 'none (started without an idempotency key)')],
    ['Started', when(x.created_at)], ['Closed', when(x.completed_at)], ['Events', String(x.event_count)],
  ];
  for (const [k, label] of [['continued_from', 'Continued from'], ['continued_to', 'Continued as new']]) {
    if (x[k]) rows.push([label, runLink(x[k])]);
  }
  if (x.chain_id && x.chain_id !== x.execution_id) rows.push(['Chain (first run)', runLink(x.chain_id)]);
  const parent = parentOf(x.idempotency_key);
  if (parent) rows.push(['Parent', h('span', { id: 'parent' }, runLink(parent.id), ' ', h('span', { class: 'muted' }, '(child command ' + parent.command + ')'))]);
  if (d.cancel_requested_at) rows.push(['Cancel requested', when(d.cancel_requested_at)]);
  if (x.last_error) rows.push(['Workflow task failing', h('span', { class: 'fail' }, x.last_error + ' (attempt ' + x.task_attempt + ')')]);
  fill(root, h('h1', { id: 'run-title' }, x.workflow_name, ' · ', h('span', { class: 'mono' }, x.workflow_id)),
    h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    h('div', { class: 'io' },
      h('div', {}, h('h2', {}, 'Input'), json(x.input)),
      x.error ? h('div', { class: 'fail' }, h('h2', {}, 'Error'), json(x.error)) : h('div', {}, h('h2', {}, 'Output'), json(x.output))));
}

function mono(s) { return h('span', { class: 'mono' }, s); }

function runLink(id) { return h('a', { href: '#/runs/' + id, class: 'mono' }, id); }

// parentOf reads a child's parent from its start key, the system key
// hv:child:<parent execution id>:<command id> its parent started it with.
function parentOf(key) {
  const m = /^hv:child:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(.+)$/.exec(key || '');
  if (!m) return null;
  return { id: m[1], command: m[2] };
}

// children lists the child workflows the run started, as the run knows
// them (a child's own page has its own state).
const shownChildren = new WeakMap();

function children(root, list) {
  const key = JSON.stringify(list);
  if (shownChildren.get(root) === key) return; // a refresh that reads the same keeps the focus
  shownChildren.set(root, key);
  if (!list.length) { fill(root); return; }
  const rows = list.map((c) => h('tr', { 'data-child': c.workflow_id },
    h('td', {}, mono(c.command_id)), h('td', {}, c.workflow_name),
    h('td', {}, c.execution_id ? h('a', { href: '#/runs/' + c.execution_id, class: 'mono' }, c.workflow_id) : mono(c.workflow_id)),
    h('td', {}, badge(c.state), c.start_error ? h('div', { class: 'fail' }, c.start_error) : null),
    h('td', {}, c.parent_close_policy), h('td', {}, when(c.initiated_at))));
  fill(root, h('h2', {}, 'Children'),
    table('Child workflows (states as this run knows them)', ['Command', 'Workflow', 'Workflow id', 'State', 'On parent close', 'Initiated'], rows));
}

function pending(root, d) {
  const acts = d.pending_activities.map((a) => h('tr', {},
    h('td', {}, a.name, ' ', h('span', { class: 'muted mono' }, a.activity_id)), h('td', {}, a.status), h('td', {}, String(a.attempt)),
    h('td', {}, mono(a.idempotency_key)), h('td', {}, when(a.scheduled_at)),
    h('td', {}, a.last_error ? h('details', { open: true, class: 'fail' }, h('summary', {}, 'Last failure ', when(a.last_failed_at)), json(a.last_error)) : '—')));
  const timers = d.pending_timers.map((t) => h('tr', {}, h('td', {}, mono(t.timer_id)), h('td', {}, when(t.fire_at))));
  fill(root, h('h2', {}, 'Pending work'),
    table('Pending activities', ['Activity', 'Status', 'Attempt', 'Activity key', 'Due', 'Last failure'], acts),
    table('Timers', ['Timer', 'Fires at'], timers));
}

// follow reads the event stream from the last event seen, reconnecting
// (with Last-Event-ID) until the run closes or the page is left.
async function follow(run, el) {
  while (!run.signal.aborted) {
    try {
      const how = await stream(run.id, run.last, (ev) => onEvent(run, el, ev), run.signal);
      if (how === 'closed') return;
    } catch (err) {
      if (run.signal.aborted) return;
      fill(el.live, 'Event stream interrupted (' + err.message + '); reconnecting…');
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function onEvent(run, el, ev) {
  if (ev.event === 'history') {
    run.events.push(ev.data);
    run.last = ev.data.event_id;
    scheduleRender(run, el);
  } else if (ev.event === 'closed') {
    run.closed = true;
    fill(el.live, 'Run closed: ', badge(ev.data.state), ' · ', String(run.events.length), ' events',
      ev.data.continued_to ? [' · continued as ', runLink(ev.data.continued_to)] : null);
  }
  run.refresh();
}

function scheduleRender(run, el) {
  if (run.rendering) return;
  run.rendering = true;
  requestAnimationFrame(() => {
    run.rendering = false;
    timeline(el.timeline, run.events);
    signals(el.signals, run.events);
    if (!run.closed) fill(el.live, 'Live: following the event stream · ', String(run.events.length), ' events so far');
  });
}

function signals(root, events) {
  const rows = events.filter((e) => e.type === 'SignalReceived').map((e) => h('tr', {},
    h('td', {}, e.data.signal_name), h('td', {}, e.data.idempotency_key ? mono(e.data.idempotency_key) : h('span', { class: 'muted' }, 'no key')),
    h('td', {}, when(e.timestamp)), h('td', {}, json(e.data.payload))));
  fill(root, table('Signals received', ['Signal', 'Signal key', 'Received', 'Payload'], rows));
}

const FAILED = /Failed|TimedOut|Terminated/;

// timeline lists events by time; an activity's events form one group.
function timeline(root, events) {
  const items = [];
  const groups = new Map();
  for (const e of events) {
    const aid = e.type.startsWith('Activity') && e.data && e.data.activity_id;
    if (!aid) { items.push(eventItem(e)); continue; }
    let g = groups.get(aid);
    if (!g) {
      g = { id: aid, events: [] };
      groups.set(aid, g);
      items.push(g);
    }
    g.events.push(e);
  }
  fill(root, h('h2', { id: 'timeline-title' }, 'History'),
    h('ol', { class: 'timeline', 'aria-label': 'History timeline' }, items.map((x) => (x instanceof Node ? x : groupItem(x)))));
}

function eventItem(e) {
  const failed = FAILED.test(e.type);
  const key = e.data && e.data.idempotency_key;
  return h('li', { class: failed ? 'ev fail' : 'ev', 'data-event-id': e.event_id, 'data-type': e.type },
    h('details', { open: failed },
      h('summary', {}, h('span', { class: 'eid' }, '#' + e.event_id), ' ', h('strong', {}, e.type), ' ', when(e.timestamp),
        key ? [' · key ', mono(key)] : null),
      json(e.data)));
}

function groupItem(g) {
  const first = g.events[0];
  const scheduled = g.events.find((e) => e.type === 'ActivityScheduled');
  const end = g.events.find((e) => /Completed|Failed|TimedOut/.test(e.type));
  const failed = end && FAILED.test(end.type);
  const name = scheduled ? scheduled.data.name : g.id;
  return h('li', { class: failed ? 'ev group fail' : 'ev group', 'data-activity-id': g.id, 'data-event-id': first.event_id },
    h('details', { open: failed },
      h('summary', {}, h('span', { class: 'eid' }, '#' + first.event_id), ' ', h('strong', {}, 'Activity ', name), ' ',
        end ? badge(end.type.replace('Activity', '')) : badge('PENDING'),
        end && end.data.attempt ? ' · attempts ' + end.data.attempt : null,
        scheduled && scheduled.data.idempotency_key ? [' · key ', mono(scheduled.data.idempotency_key)] : null),
      h('ol', {}, g.events.map(eventItem))));
}
