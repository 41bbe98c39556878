// The runs page: filters (state, workflow, id, started range), counts by
// state, keyset paging, partial results flagged.
import { call } from './api.js';
import { h, fill, field, badge, when, table, notice } from './dom.js';

export const STATES = ['QUEUED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TERMINATED', 'TIMED_OUT', 'CONTINUED_AS_NEW'];
const PAGE_SIZE = 20;
const FILTERS = ['state', 'workflow_name', 'workflow_id', 'started_after', 'started_before'];

export function runsPage(root, params) {
  const ctl = new AbortController();
  const view = { params, cursors: [params.get('cursor') || ''], signal: ctl.signal,
    counts: h('nav', { id: 'counts', class: 'counts', 'aria-label': 'Runs by state' }), out: h('section', { 'aria-labelledby': 'runs-title' }) };
  fill(root, h('h1', { id: 'runs-title' }, 'Runs'), filters(params), view.counts, view.out);
  load(view);
  return () => ctl.abort();
}

function filters(params) {
  const state = h('select', { name: 'state' }, h('option', { value: '' }, 'Any state'),
    STATES.map((s) => h('option', { value: s, selected: params.get('state') === s }, s)));
  const name = h('input', { name: 'workflow_name', value: params.get('workflow_name') || '', autocomplete: 'off' });
  const wid = h('input', { name: 'workflow_id', value: params.get('workflow_id') || '', autocomplete: 'off' });
  const after = timeInput('started_after', params);
  const before = timeInput('started_before', params);
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs' },
    field('State', state), field('Workflow name', name), field('Workflow id', wid),
    field('Started at or after', after), field('Started before', before),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Apply filters'),
      h('a', { href: '#/runs', class: 'button quiet' }, 'Clear filters')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const el of [state, name, wid]) if (el.value) q.set(el.name, el.value);
    for (const el of [after, before]) if (el.value) q.set(el.name, fromLocal(el.value));
    location.hash = '#/runs?' + q.toString();
  });
  return form;
}

// timeInput is a local date-time control; the page's address keeps the
// instant in RFC 3339 (UTC), as the API takes it.
function timeInput(name, params) {
  return h('input', { type: 'datetime-local', step: 1, name, value: toLocal(params.get(name)) });
}

function fromLocal(v) {
  const d = new Date(v);
  return isNaN(d) ? v : d.toISOString();
}

function toLocal(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d)) return '';
  const p = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
}

// query is the list request of the view's filters; the first page also
// asks for the counts by state (they do not change with the page).
function query(view) {
  const q = new URLSearchParams({ page_size: String(PAGE_SIZE) });
  for (const k of FILTERS) if (view.params.get(k)) q.set(k, view.params.get(k));
  const cursor = view.cursors[view.cursors.length - 1];
  if (cursor) q.set('cursor', cursor);
  if (!view.counted) q.set('counts', 'true');
  return q;
}

// badTime names a started filter of the address that is not an instant
// (the page says so rather than send it).
function badTime(params) {
  return ['started_after', 'started_before'].find((k) => params.get(k) && isNaN(Date.parse(params.get(k))));
}

async function load(view) {
  const bad = badTime(view.params);
  if (bad) {
    fill(view.out, notice(bad + ' ' + JSON.stringify(view.params.get(bad)) + ' is not a date and time (RFC 3339, e.g. 2026-01-02T15:04:05Z)', 'error'));
    return;
  }
  fill(view.out, notice('Loading…'));
  let page;
  try {
    page = await call('GET', '/workflows?' + query(view).toString(), { signal: view.signal });
  } catch (err) {
    if (err.name !== 'AbortError') fill(view.out, notice('Could not list runs: ' + err.message, 'error'));
    return;
  }
  if (page.counts) {
    view.counted = true;
    counts(view.counts, page, view.params);
  }
  const rows = page.workflows.map((x) => h('tr', {},
    h('td', {}, h('a', { href: '#/runs/' + x.execution_id, class: 'mono' }, x.workflow_id)),
    h('td', {}, x.workflow_name), h('td', {}, badge(x.state)), h('td', {}, when(x.created_at)),
    h('td', {}, when(x.completed_at))));
  fill(view.out, partial(page), table('Runs, newest first', ['Workflow id', 'Workflow', 'State', 'Started', 'Closed'], rows), pager(view, page));
}

function pager(view, page) {
  const go = (f) => () => { f(); load(view); };
  return h('nav', { class: 'row', 'aria-label': 'Pages of runs' },
    h('button', { type: 'button', class: 'quiet', disabled: view.cursors.length < 2, onclick: go(() => view.cursors.pop()) }, 'Previous page'),
    h('span', { class: 'muted' }, 'Page ' + view.cursors.length),
    h('button', { type: 'button', class: 'quiet', disabled: !page.next_cursor, onclick: go(() => view.cursors.push(page.next_cursor)) }, 'Next page'));
}

function partial(page) {
  if (page.status !== 'partial') return null;
  return notice('Partial results: shards ' + page.unavailable_shards.join(', ') + ' could not be read; the list and the counts leave their runs out.', 'warn');
}

// counts shows the runs by state under the other filters, each a link
// that filters by its state.
function counts(root, page, params) {
  const total = Object.values(page.counts).reduce((a, b) => a + b, 0);
  const link = (state, label, n) => {
    const q = new URLSearchParams(params);
    q.delete('cursor');
    if (state) q.set('state', state); else q.delete('state');
    const current = (params.get('state') || '') === state;
    return h('a', { href: '#/runs?' + q.toString(), class: 'count', 'data-state': state || 'ALL', 'aria-current': current ? 'true' : null },
      label, ' ', h('span', { class: 'n' }, String(n)));
  };
  fill(root, link('', 'All', total), STATES.filter((s) => page.counts[s] || params.get('state') === s).map((s) => link(s, s, page.counts[s] || 0)),
    page.status === 'partial' ? h('span', { class: 'muted' }, '(partial)') : null);
}
