// DOM helpers: elements are built node by node (never from HTML text),
// so data from the API can never become markup.

// h builds an element: props are attributes, on* props listeners.
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// fill replaces el's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// json shows a JSON value.
export function json(v) {
  return h('pre', { class: 'json' }, v === undefined ? '—' : JSON.stringify(v, null, 2));
}

// when shows a timestamp in local time, the exact one in datetime.
export function when(t) {
  if (!t) return '—';
  const d = new Date(t);
  return h('time', { datetime: t, title: t }, d.toLocaleString());
}

// badge shows a run or shard state.
export function badge(state) {
  return h('span', { class: 'badge s-' + String(state).toLowerCase() }, state);
}

// field is a labelled control: label text, then the control.
export function field(label, control) {
  const id = control.id || 'f-' + Math.random().toString(36).slice(2, 9);
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), control);
}

// table builds a table in a scrolling wrapper (the page never scrolls
// sideways on a phone).
export function table(caption, heads, rows) {
  return h('div', { class: 'table-wrap' },
    h('table', {},
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, heads.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: heads.length, class: 'muted' }, 'None')))));
}

// notice is a status line (errors get role alert).
export function notice(text, kind = 'info') {
  return h('p', { class: 'notice ' + kind, role: kind === 'error' ? 'alert' : 'status' }, text);
}

// confirm asks in the page's dialog; it resolves true on confirm.
export function confirm(title, body, okLabel) {
  const dlg = document.getElementById('confirm');
  fill(document.getElementById('confirm-title'), title);
  fill(document.getElementById('confirm-body'), body);
  const ok = document.getElementById('confirm-ok');
  fill(ok, okLabel);
  ok.disabled = false;
  dlg.returnValue = '';
  dlg.showModal();
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
  });
}
