// Reset (admin): a new run replays this run's history up to a point the
// picker offers (the first task, the last task, or an event that is a
// point), then runs the current code; the answer links the new run.
import { call } from './api.js';
import { h, field, confirm } from './dom.js';

const commands = new Set(['ActivityScheduled', 'TimerStarted', 'MarkerRecorded', 'WorkflowCompleted', 'WorkflowFailed',
  'WorkflowContinuedAsNew', 'TimerCanceled', 'ActivityCancelRequested', 'SignalExternalInitiated', 'ChildWorkflowInitiated',
  'UpdateCompleted']);
const closes = new Set(['WorkflowCompleted', 'WorkflowFailed', 'WorkflowCancelled', 'WorkflowTerminated', 'WorkflowTimedOut',
  'WorkflowContinuedAsNew']);

// points are the events a reset may go back to: no close, and not
// followed by a command of the same workflow task.
export function points(events) {
  return events.filter((ev, i) => !closes.has(ev.type) &&
    !(commands.has(ev.type) && events[i + 1] && commands.has(events[i + 1].type)));
}

export async function resetRun(run, say) {
  const point = h('select', { name: 'point' },
    h('option', { value: 'first' }, 'First workflow task (event 0)'),
    h('option', { value: 'last_task' }, 'Last workflow task'),
    points(run.events).map((ev) => h('option', { value: String(ev.event_id) }, 'Event ' + ev.event_id + ' · ' + ev.type)));
  const reason = h('input', { name: 'reason', autocomplete: 'off' });
  const ok = await confirm('Reset this run?', [
    h('p', {}, 'A new run replays this history up to the point, receives the later signals again, and runs the current code. ' +
      'Activities after the point run again with the keys they had; the current run is terminated.'),
    field('Reset point', point), field('Reason', reason)], 'Reset run');
  if (!ok) return;
  const body = { reason: reason.value };
  if (point.value === 'first' || point.value === 'last_task') body.point = point.value;
  else body.event_id = Number(point.value);
  try {
    // One key per confirmed reset: a retry of this request resets once.
    const r = await call('POST', '/workflows/' + encodeURIComponent(run.id) + '/reset',
      { body, header: { 'Idempotency-Key': newKey() } });
    say(h('span', {}, 'Reset to event ' + r.event_id + ': new run ', h('a', { href: '#/runs/' + r.execution_id, class: 'mono' }, r.execution_id)),
      'ok', 'reset');
  } catch (err) {
    say('Reset refused: ' + err.message, 'error');
  }
  run.refresh();
}

// newKey is a random key (crypto.randomUUID needs a secure context; a
// node's UI may be served over plain HTTP).
function newKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return 'ui-reset-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
