// The runs page: filters, keyset paging, partial results flagged.
import { call } from './api.js';
import { h, fill, field, badge, when, table, notice } from './dom.js';

export const STATES = ['RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'TERMINATED', 'TIMED_OUT', 'CONTINUED_AS_NEW'];
const PAGE_SIZE = 20;

export function runsPage(root, params) {
  const ctl = new AbortController();
  const cursors = [params.get('cursor') || ''];
  const out = h('section', { 'aria-labelledby': 'runs-title' });
  fill(root, h('h1', { id: 'runs-title' }, 'Runs'), filters(params), out);
  load(out, params, cursors, ctl.signal);
  return () => ctl.abort();
}

function filters(params) {
  const state = h('select', { name: 'state' }, h('option', { value: '' }, 'Any state'),
    STATES.map((s) => h('option', { value: s, selected: params.get('state') === s }, s)));
  const name = h('input', { name: 'workflow_name', value: params.get('workflow_name') || '', autocomplete: 'off' });
  const wid = h('input', { name: 'workflow_id', value: params.get('workflow_id') || '', autocomplete: 'off' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs' },
    field('State', state), field('Workflow name', name), field('Workflow id', wid),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Apply filters'),
      h('a', { href: '#/runs', class: 'button quiet' }, 'Clear filters')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const el of [state, name, wid]) if (el.value) q.set(el.name, el.value);
    location.hash = '#/runs?' + q.toString();
  });
  return form;
}

async function load(out, params, cursors, signal) {
  const q = new URLSearchParams({ page_size: String(PAGE_SIZE) });
  for (const k of ['state', 'workflow_name', 'workflow_id']) if (params.get(k)) q.set(k, params.get(k));
  const cursor = cursors[cursors.length - 1];
  if (cursor) q.set('cursor', cursor);
  fill(out, notice('Loading…'));
  let page;
  try {
    page = await call('GET', '/workflows?' + q.toString(), { signal });
  } catch (err) {
    if (err.name !== 'AbortError') fill(out, notice('Could not list runs: ' + err.message, 'error'));
    return;
  }
  const rows = page.workflows.map((x) => h('tr', {},
    h('td', {}, h('a', { href: '#/runs/' + x.execution_id, class: 'mono' }, x.workflow_id)),
    h('td', {}, x.workflow_name), h('td', {}, badge(x.state)), h('td', {}, when(x.created_at)),
    h('td', {}, when(x.completed_at))));
  const pager = h('nav', { class: 'row', 'aria-label': 'Pages of runs' },
    h('button', { type: 'button', class: 'quiet', disabled: cursors.length < 2,
      onclick: () => { cursors.pop(); load(out, params, cursors, signal); } }, 'Previous page'),
    h('span', { class: 'muted' }, 'Page ' + cursors.length),
    h('button', { type: 'button', class: 'quiet', disabled: !page.next_cursor,
      onclick: () => { cursors.push(page.next_cursor); load(out, params, cursors, signal); } }, 'Next page'));
  fill(out,
    page.status === 'partial' ? notice('Partial results: shards ' + page.unavailable_shards.join(', ') + ' could not be read.', 'warn') : null,
    table('Runs, newest first', ['Workflow id', 'Workflow', 'State', 'Started', 'Closed'], rows), pager);
}
