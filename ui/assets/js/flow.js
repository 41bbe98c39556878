// The flow page: the concurrency and rate limits in force, and per shard
// each key's use of its limit — runs running (with the limit's
// occupancy) and queued, activity attempts running and tasks waiting —
// read from GET /flow every few seconds.
import { call } from './api.js';
import { h, fill, table, notice } from './dom.js';

const REFRESH_MS = 2000;

export function flowPage(root) {
  const ctl = new AbortController();
  const body = h('div', { 'aria-live': 'polite' });
  fill(root, h('h1', {}, 'Flow control'), body);
  let last = '';
  const refresh = async () => {
    let r;
    try {
      r = await call('GET', '/flow', { signal: ctl.signal });
    } catch (err) {
      if (!ctl.signal.aborted) fill(body, notice('Flow: ' + err.message, 'error'));
      return;
    }
    const key = JSON.stringify(r);
    if (key === last) return; // unchanged: keep the elements (and the focus)
    last = key;
    render(body, r);
  };
  refresh();
  const timer = setInterval(refresh, REFRESH_MS);
  return () => { clearInterval(timer); ctl.abort(); };
}

function render(body, r) {
  const max = new Map((r.limits || []).map((l) => [l.workflow_name, l.max_running]));
  fill(body,
    r.status === 'partial' ? notice('Shards not read: ' + (r.unavailable_shards || []).join(', '), 'error') : null,
    table('Workflow limits', ['Workflow', 'Max running', 'Key pointer'],
      (r.limits || []).map((l) => h('tr', {}, h('td', {}, l.workflow_name), h('td', {}, l.max_running), h('td', {}, l.key_pointer || '—')))),
    table('Workflow keys (per shard)', ['Shard', 'Workflow', 'Key', 'Running', 'Queued'],
      (r.keys || []).map((k) => h('tr', { 'data-flow-key': k.workflow_name + '/' + k.key },
        h('td', {}, k.shard), h('td', {}, k.workflow_name), h('td', {}, k.key === '' ? '(name)' : k.key),
        h('td', {}, occupancy(k.running, max.get(k.workflow_name))), h('td', {}, k.queued)))),
    table('Activity limits', ['Activity', 'Max running', 'Key pointer', 'Per second', 'Burst', 'Rate key pointer'],
      (r.activity_limits || []).map((l) => h('tr', {}, h('td', {}, l.activity_name), h('td', {}, l.max_running || '—'),
        h('td', {}, l.key_pointer || '—'), h('td', {}, l.per_second || '—'), h('td', {}, l.burst || '—'),
        h('td', {}, l.rate_key_pointer || '—')))),
    table('Activity keys (per shard)', ['Shard', 'Activity', 'Key', 'Running', 'Waiting'],
      (r.activities || []).map((k) => h('tr', {}, h('td', {}, k.shard), h('td', {}, k.activity_name),
        h('td', {}, k.key === '' ? '(name)' : k.key), h('td', {}, k.running), h('td', {}, k.waiting)))));
}

// occupancy shows running of max as a number and a meter.
function occupancy(running, max) {
  if (!max) return String(running);
  const label = running + ' of ' + max;
  return h('span', {}, label, h('progress', { max, value: Math.min(running, max), 'aria-label': label + ' slots held' }));
}
