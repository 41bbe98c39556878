// The run's actions, by scope: signal (name, JSON payload, key) and
// cancel with write, terminate and reset (reset.js) with admin; each asks
// for confirmation where it closes the run, and shows the server's own
// answer.
import { call } from './api.js';
import { h, fill, field, notice, confirm } from './dom.js';
import { may } from './session.js';
import { resetRun } from './reset.js';

export function actions(run, session) {
  const out = h('div', { class: 'answers', 'aria-live': 'polite', id: 'action-answers' });
  return h('section', { class: 'card', 'aria-labelledby': 'actions-title' },
    h('h2', { id: 'actions-title' }, 'Actions'),
    signalForm(run, out),
    h('div', { class: 'row' },
      h('button', { type: 'button', class: 'warn', onclick: () => closeRun(run, out, 'cancel') }, 'Cancel run'),
      may(session, 'admin') ? h('button', { type: 'button', class: 'danger', onclick: () => closeRun(run, out, 'terminate') }, 'Terminate run') : null,
      may(session, 'admin') ? h('button', { type: 'button', class: 'warn', onclick: () => resetRun(run, (text, kind, outcome) => say(out, text, kind, outcome)) }, 'Reset run') : null),
    out);
}

function signalForm(run, out) {
  const name = h('input', { name: 'signal_name', required: true, autocomplete: 'off' });
  const payload = h('textarea', { name: 'payload', rows: 2, spellcheck: 'false', placeholder: 'null' });
  const key = h('input', { name: 'idempotency_key', autocomplete: 'off', placeholder: 'optional: a retry with the same key is delivered once' });
  const form = h('form', { class: 'signal', 'aria-label': 'Send a signal' },
    field('Signal name', name), field('Payload (JSON)', payload), field('Signal key', key),
    h('button', { type: 'submit' }, 'Send signal'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = payload.value.trim() || 'null';
    try { JSON.parse(body); } catch (err) {
      say(out, 'The payload is not JSON: ' + err.message, 'error');
      return;
    }
    const header = key.value ? { 'Idempotency-Key': key.value } : {};
    try {
      const r = await call('POST', '/workflows/' + encodeURIComponent(run.id) + '/signal/' + encodeURIComponent(name.value), { body, header });
      const what = r.signal_delivered ? 'delivered' : 'deduplicated: this key was already delivered, no new event';
      say(out, 'Signal ' + name.value + (key.value ? ' with key ' + key.value : '') + ': ' + what, r.signal_delivered ? 'ok' : 'info',
        r.signal_delivered ? 'delivered' : 'deduplicated');
    } catch (err) {
      say(out, 'Signal refused: ' + err.message, 'error');
    }
    run.refresh();
  });
  return form;
}

async function closeRun(run, out, how) {
  const reason = h('input', { name: 'reason', autocomplete: 'off' });
  const text = how === 'terminate'
    ? 'Terminate closes the run at once: its code does not run again, pending activities are abandoned.'
    : 'Cancel asks the run\'s code to stop; it decides how to close.';
  const ok = await confirm(how === 'terminate' ? 'Terminate this run?' : 'Cancel this run?',
    [h('p', {}, text), field('Reason', reason)], how === 'terminate' ? 'Terminate run' : 'Cancel run');
  if (!ok) return;
  try {
    const r = await call('POST', '/workflows/' + encodeURIComponent(run.id) + '/' + how, { body: { reason: reason.value } });
    say(out, how === 'terminate' ? 'Terminated: ' + r.state : 'Cancel requested: ' + r.state, 'ok', how);
  } catch (err) {
    say(out, how + ' refused: ' + err.message, 'error');
  }
  run.refresh();
}

function say(out, text, kind, outcome) {
  const p = notice(text, kind);
  if (outcome) p.dataset.outcome = outcome;
  out.prepend(p);
}
