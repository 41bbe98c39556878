// The API client. The token lives in this module's memory only: no
// cookie, no storage, never in a URL; it is sent as Authorization.

export const BASE = '/api/harvest';

let token = '';

export function setToken(t) {
  token = t.trim().replace(/^Bearer\s+/i, '');
}

// ApiError is an answer other than 2xx: status and the JSON error body.
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || 'HTTP ' + status);
    this.status = status;
    this.code = body && body.code;
    this.body = body;
  }
}

function headers(extra) {
  const h = { ...extra };
  if (token) h.Authorization = 'Bearer ' + token;
  return h;
}

// readRetries is how often a GET answered 503 is sent again: a node
// whose token table may trail the leader's (just restarted, or a catalog
// change not applied yet), an owner moving, answer 503 with Retry-After
// for a moment. Other methods are never resent: their 503 may come after
// the work was done.
const readRetries = 4;

// call sends a request; body is JSON-encoded unless it is a string.
export async function call(method, path, { body, header = {}, signal } = {}) {
  const init = { method, headers: headers(header), cache: 'no-store', signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let res = await fetch(BASE + path, init);
  for (let i = 0; i < readRetries && method === 'GET' && res.status === 503; i++) {
    await pause(retryAfter(res), signal);
    res = await fetch(BASE + path, init);
  }
  const text = await res.text();
  let data = {};
  if (text) {
    try { data = JSON.parse(text); } catch { data = { error: text }; }
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

// retryAfter is the pause a 503 asks for, in ms (1 s at most).
function retryAfter(res) {
  const v = res.headers.get('Retry-After');
  const secs = v === null ? NaN : Number(v);
  return Number.isFinite(secs) && secs >= 0 ? Math.min(secs, 1) * 1000 : 500;
}

function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}

// stream reads a run's event stream after event id `after` (-1: all),
// calling onEvent({event, id, data}) per event. It resolves 'closed'
// after the run's closed event, 'ended' when the stream ends otherwise.
export async function stream(id, after, onEvent, signal) {
  const h = headers({ Accept: 'text/event-stream' });
  if (after >= 0) h['Last-Event-ID'] = String(after);
  const res = await fetch(BASE + '/workflows/' + encodeURIComponent(id) + '/events/stream', { headers: h, signal, cache: 'no-store' });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => ({})));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return 'ended';
    buf += value;
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const ev = parseFrame(buf.slice(0, cut));
      buf = buf.slice(cut + 2);
      if (!ev) continue;
      onEvent(ev);
      if (ev.event === 'closed') return 'closed';
    }
  }
}

function parseFrame(raw) {
  const ev = { event: 'message', id: '', data: '' };
  let any = false;
  for (const line of raw.split('\n')) {
    if (line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const k = i < 0 ? line : line.slice(0, i);
    const v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (k === 'event') ev.event = v;
    else if (k === 'id') ev.id = v;
    else if (k === 'data') ev.data += v;
    else continue;
    any = true;
  }
  if (!any) return null;
  try { ev.data = JSON.parse(ev.data); } catch { /* keep the text */ }
  return ev;
}
