// The page: sign-in, then a hash router over the runs, run, flow and
// cluster pages. Each page function returns its cleanup (called on leaving).
import { call, setToken, ApiError } from './api.js';
import { h, fill, field, notice } from './dom.js';
import { runsPage } from './runs.js';
import { runPage } from './run.js';
import { clusterPage } from './cluster.js';
import { flowPage } from './flow.js';

const main = document.getElementById('main');
let session = null;
let leave = null;

function signIn(problem) {
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', spellcheck: 'false', placeholder: 'hvt_…' });
  const form = h('form', { class: 'card narrow', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in'),
    h('p', { class: 'muted' }, 'The token stays in this tab\'s memory only: reloading the page signs you out.'),
    field('API token', input),
    problem ? notice(problem, 'error') : null,
    h('div', { class: 'row' },
      h('button', { type: 'submit' }, 'Sign in'),
      h('button', { type: 'button', class: 'quiet', onclick: () => start('') }, 'Continue without a token')));
  form.addEventListener('submit', (e) => { e.preventDefault(); start(input.value); });
  fill(main, form);
  input.focus();
}

async function start(tok) {
  setToken(tok);
  try {
    session = await call('GET', '/whoami');
  } catch (err) {
    setToken('');
    session = null;
    signIn(err instanceof ApiError && err.status === 401 ? 'That token was refused: ' + err.message : err.message);
    return;
  }
  fill(document.getElementById('who'), session.auth ? 'Scope: ' + session.scope : 'No authentication', ' · node ' + session.node_id);
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  route();
}

function signOut() {
  setToken('');
  session = null;
  if (leave) { leave(); leave = null; }
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  fill(document.getElementById('who'));
  signIn();
}

function route() {
  if (leave) { leave(); leave = null; }
  if (!session) { signIn(); return; }
  const [path, query] = location.hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean);
  const params = new URLSearchParams(query || '');
  let page = 'runs';
  if (parts[0] === 'runs' && parts[1]) leave = runPage(main, decodeURIComponent(parts[1]), session);
  else if (parts[0] === 'cluster') { page = 'cluster'; leave = clusterPage(main, session); }
  else if (parts[0] === 'flow') { page = 'flow'; leave = flowPage(main); }
  else leave = runsPage(main, params, session);
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

document.getElementById('signout').addEventListener('click', signOut);
window.addEventListener('hashchange', route);
signIn();
