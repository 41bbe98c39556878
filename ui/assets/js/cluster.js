// The cluster page: gossip members and routing for every reader; with an
// admin token also raft peers, the shard catalog with drain (its safety
// check shown before confirming, a force box when it finds the drain
// unsafe, a progress bar while it drains) and undrain, and admission
// gates (list, close, open).
import { call } from './api.js';
import { h, fill, field, badge, when, table, notice, confirm } from './dom.js';
import { may } from './session.js';

const REFRESH_MS = 2000;

export function clusterPage(root, session) {
  const ctl = new AbortController();
  const admin = may(session, 'admin');
  const el = {
    members: h('section', { 'aria-label': 'Members' }), routing: h('section', { 'aria-label': 'Routing' }),
    peers: h('section', { 'aria-label': 'Raft peers' }), shards: h('section', { 'aria-label': 'Shard catalog' }),
    gates: h('section', { 'aria-label': 'Admission gates' }), answers: h('div', { 'aria-live': 'polite', id: 'cluster-answers' }),
  };
  const refresh = () => load(el, admin, ctl.signal);
  fill(root, h('h1', {}, 'Cluster'), el.answers, el.members, el.routing,
    admin ? [el.peers, el.shards, el.gates, gateForm(el, refresh)] : notice('The raft peers, the shard catalog and admission gates need an admin token.'));
  refresh();
  const timer = setInterval(refresh, REFRESH_MS);
  return () => { clearInterval(timer); ctl.abort(); };
}

async function load(el, admin, signal) {
  const get = (p) => call('GET', p, { signal }).catch((err) => ({ failed: err }));
  const [members, routing] = await Promise.all([get('/cluster/members'), get('/cluster/routing')]);
  if (signal.aborted) return;
  changed(el.members, members, () => renderMembers(el.members, members));
  changed(el.routing, routing, () => renderRouting(el.routing, routing));
  if (!admin) return;
  const [peers, shards, gates] = await Promise.all([get('/admin/raft/peers'), get('/admin/shards'), get('/admin/gates')]);
  if (signal.aborted) return;
  const reload = () => load(el, admin, signal);
  changed(el.peers, peers, () => renderPeers(el.peers, peers));
  changed(el.shards, withoutClock(shards), () => renderShards(el, shards, reload));
  changed(el.gates, gates, () => renderGates(el, gates, reload));
  tickProgress(el.shards);
}

// rendered holds what each section last showed: a refresh that reads
// the same leaves the section's elements (and the focus) alone.
const rendered = new WeakMap();

function changed(root, data, render) {
  const key = JSON.stringify(data, (k, v) => (v instanceof Error ? v.message : v));
  if (rendered.get(root) === key) return;
  rendered.set(root, key);
  render();
}

// withoutClock drops the database clock of each status (it changes at
// every read).
function withoutClock(r) {
  if (!r.shards) return r;
  return { ...r, shards: r.shards.map((s) => (s.status ? { ...s, status: { ...s.status, now: undefined } } : s)) };
}

function failed(root, what, r) {
  if (!r.failed) return false;
  fill(root, notice(what + ': ' + r.failed.message, r.failed.status === 404 ? 'info' : 'error'));
  return true;
}

function renderMembers(root, r) {
  if (failed(root, 'Members', r)) return;
  fill(root, table('Gossip members', ['Node', 'State', 'API', 'Shards', 'Version'], r.members.map((m) => h('tr', {},
    h('td', {}, m.node_id, m.self ? ' (this node)' : ''), h('td', {}, badge(m.state)), h('td', {}, m.api_addr || '—'),
    h('td', {}, (m.shards || []).join(', ') || '—'), h('td', {}, m.version || '—')))));
}

function renderRouting(root, r) {
  if (failed(root, 'Routing', r)) return;
  fill(root, table('Shard routing (placement epoch ' + r.placement_epoch + ')', ['Shard', 'State', 'Owner', 'Here'],
    r.shards.map((s) => h('tr', {}, h('td', {}, String(s.shard_id)), h('td', {}, badge(s.state)), h('td', {}, s.owner || 'unknown'),
      h('td', {}, s.self ? 'yes' : 'no')))));
}

function renderPeers(root, r) {
  if (failed(root, 'Raft peers', r)) return;
  fill(root, table('Raft peers', ['Peer', 'Address', 'Role'], r.peers.map((p) => h('tr', {},
    h('td', {}, p.id), h('td', {}, p.addr), h('td', {}, p.leader ? badge('LEADER') : p.voter ? 'voter' : 'non-voter')))));
}

function renderShards(el, r, reload) {
  if (failed(el.shards, 'Shard catalog', r)) return;
  const writable = r.shards.filter((s) => s.state === 'writable').length;
  fill(el.shards, table('Shard catalog (idempotency window ' + r.idempotency_window + ', leader ' + (r.leader || 'unknown') + ')',
    ['Shard', 'State', 'Owner', 'Reachable', 'Inside the window', 'Window passes', 'Action'],
    r.shards.map((s) => h('tr', { 'data-shard': s.shard_id },
      h('td', {}, String(s.shard_id)), h('td', {}, badge(s.state), s.state === 'draining' ? progress(s) : null),
      h('td', {}, s.owner || 'unknown'), h('td', {}, s.reachable ? 'yes' : h('span', { class: 'fail' }, 'no')),
      h('td', {}, s.status ? s.status.claims_in_window + ' claims, ' + s.status.runs_in_window + ' runs' : '—'),
      h('td', {}, s.status && s.status.window_passes_at ? when(s.status.window_passes_at) : 'passed'),
      h('td', {}, shardAction(el, s, writable, reload))))));
}

// progress is a draining shard's bar: how much of the window since the
// drain has passed (tickProgress moves it).
function progress(s) {
  const end = s.status && s.status.window_passes_at ? s.status.window_passes_at : s.state_since;
  return h('progress', { max: 100, value: 0, 'data-shard-id': s.shard_id, 'data-since': s.state_since, 'data-until': end });
}

function tickProgress(root) {
  for (const p of root.querySelectorAll('progress')) {
    const start = Date.parse(p.dataset.since);
    const end = Date.parse(p.dataset.until);
    const pct = end <= start ? 100 : Math.min(100, Math.max(0, Math.round((Date.now() - start) / (end - start) * 100)));
    p.value = pct;
    p.setAttribute('aria-label', 'Drain of shard ' + p.dataset.shardId + ': ' + pct + '% of the window passed');
  }
}

function shardAction(el, s, writable, reload) {
  if (s.state === 'writable') {
    return h('button', { type: 'button', class: 'warn', onclick: () => drain(el, s.shard_id, writable, reload) }, 'Drain shard ' + s.shard_id);
  }
  if (s.state === 'draining' || s.state === 'read_only') {
    return h('button', { type: 'button', class: 'quiet', onclick: () => undrain(el, s.shard_id, reload) }, 'Undrain shard ' + s.shard_id);
  }
  return '—';
}

// drain shows the shard's fresh safety facts, then drains. A drain the
// safety check finds unsafe is sent only forced, and only once the
// operator ticked the force box under the risks shown.
async function drain(el, id, writable, reload) {
  let s;
  try {
    s = await call('GET', '/admin/shards/' + id);
  } catch (err) {
    say(el, 'Could not read shard ' + id + ': ' + err.message, 'error');
    return;
  }
  const risks = drainRisks(s, writable);
  const force = h('input', { type: 'checkbox', name: 'force', id: 'force-drain' });
  const body = [drainFacts(s.status || {}),
    h('p', {}, 'Existing runs keep running; the shard keeps answering dedup probes until the window passes, then becomes read-only.'),
    risks.length ? [notice('Unsafe: ' + risks.join('; ') + '. The server refuses this drain unless it is forced.', 'warn'),
      h('div', { class: 'row' }, force, h('label', { for: 'force-drain' }, 'Force the drain despite these risks'))]
      : notice('Safety check passed.', 'ok'),
  ];
  const asked = confirm('Drain shard ' + id + '?', body, risks.length ? 'Force drain shard ' + id : 'Drain shard ' + id);
  if (risks.length) guard(force);
  if (!(await asked)) return;
  await sendDrain(el, id, risks.length > 0 && force.checked);
  reload();
}

function drainRisks(s, writable) {
  const risks = [];
  if (writable <= 1) risks.push('it is the last writable shard: new runs would have nowhere to go');
  if (!s.reachable) risks.push('it cannot be reached: its claims cannot be checked');
  return risks;
}

function drainFacts(st) {
  return h('dl', { class: 'facts' },
    h('dt', {}, 'Start claims inside the window'), h('dd', {}, String(st.claims_in_window ?? '?')),
    h('dt', {}, 'Runs inside the window'), h('dd', {}, String(st.runs_in_window ?? '?')),
    h('dt', {}, 'Running executions'), h('dd', {}, String(st.running_executions ?? '?')),
    h('dt', {}, 'Window passes'), h('dd', {}, st.window_passes_at ? when(st.window_passes_at) : 'already passed'));
}

// guard keeps the dialog's confirm button off until the box is ticked.
function guard(box) {
  const ok = document.getElementById('confirm-ok');
  ok.disabled = true;
  box.addEventListener('change', () => { ok.disabled = !box.checked; });
}

async function sendDrain(el, id, force) {
  try {
    const r = await call('POST', '/admin/shards/' + id + '/drain', { body: { force } });
    if (r.forced) say(el, 'Shard ' + id + ' is draining, forced: ' + (r.risk || 'a safety check was overridden') + '.', 'warn', 'forced');
    else say(el, 'Shard ' + id + ' is draining.', 'ok', 'drained');
  } catch (err) {
    say(el, 'Drain refused: ' + err.message, 'error');
  }
}

async function undrain(el, id, reload) {
  try {
    await call('POST', '/admin/shards/' + id + '/undrain', { body: {} });
    say(el, 'Shard ' + id + ' is writable again.', 'ok', 'undrained');
  } catch (err) {
    say(el, 'Undrain refused: ' + err.message, 'error');
  }
  reload();
}

function renderGates(el, r, reload) {
  if (failed(el.gates, 'Gates', r)) return;
  fill(el.gates, table('Admission gates (closed gates block fresh starts in their scope)', ['Gate', 'Scope', 'Reason', 'Expires', 'Action'],
    r.gates.map((g) => h('tr', {}, h('td', {}, g.gate_id), h('td', {}, g.scope_kind + (g.scope_value ? ' ' + g.scope_value : '')),
      h('td', {}, g.reason), h('td', {}, when(g.expires_at)),
      h('td', {}, h('button', { type: 'button', class: 'quiet', onclick: () => openGate(el, g.gate_id, reload) }, 'Open gate ' + g.gate_id))))));
}

function gateForm(el, reload) {
  const kind = h('select', { name: 'scope_kind' }, ['cluster', 'workflow_name', 'shard'].map((k) => h('option', { value: k }, k)));
  const value = h('input', { name: 'scope_value', autocomplete: 'off' });
  const reason = h('input', { name: 'reason', autocomplete: 'off', required: true });
  const form = h('form', { class: 'filters', 'aria-label': 'Close a gate' },
    field('Gate scope', kind), field('Scope value', value), field('Reason', reason), h('div', { class: 'row' }, h('button', { type: 'submit', class: 'warn' }, 'Close gate')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = { scope_kind: kind.value, reason: reason.value };
    if (value.value) body.scope_value = value.value;
    try {
      const g = await call('POST', '/admin/gates', { body });
      say(el, 'Gate ' + g.gate_id + ' closed.', 'ok', 'gate-closed');
      form.reset();
    } catch (err) {
      say(el, 'Gate refused: ' + err.message, 'error');
    }
    reload();
  });
  return h('section', { 'aria-label': 'Close a gate' }, h('h2', {}, 'Close a gate'), form);
}

async function openGate(el, id, reload) {
  try {
    await call('DELETE', '/admin/gates/' + encodeURIComponent(id));
    say(el, 'Gate ' + id + ' opened.', 'ok', 'gate-opened');
  } catch (err) {
    say(el, 'Could not open gate: ' + err.message, 'error');
  }
  reload();
}

function say(el, text, kind, outcome) {
  const p = notice(text, kind);
  if (outcome) p.dataset.outcome = outcome;
  el.answers.prepend(p);
}
