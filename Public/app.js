// The DiffStream demo page: a user of the client library (diffstream.js). It shows one feed at a time,
// picked from GET /feeds (home first); the examples' looks are the templates in index.html, and the few
// things attributes cannot say are the hooks of demo-looks.js, which the dashboard shares.
import { connect, render, renderActions, action } from './diffstream.js';
import { hooksFor, sectionHook, presenceHooks } from './demo-looks.js';
import { words } from './diffstream-util.js';

const $ = (id) => document.getElementById(id);
const feedEl = $('feed');
const tokenInput = $('token');

const app = {
  // ?feed=NAME shows that feed; ?user=NAME that user's home feed (the family home.<user>); neither:
  // home, else the first feed the server lists.
  feed: new URLSearchParams(location.search).get('feed')
    || (new URLSearchParams(location.search).get('user') ? `home.${new URLSearchParams(location.search).get('user')}` : null),
  state: 'connecting',
  region: null,
  presence: null, // the region of who is watching the feed shown (its presence feed), if it has one
  catalog: new Map(),
};

// Read by the browser tests and handy in the console.
window.diffstream = {
  get version() { return app.region ? app.region.subscription.version : null; },
  get feed() { return app.feed; },
  get state() { return app.state; },
  get stale() { return app.region ? app.region.subscription.stale : null; },
  /// The presence feed shown beside the feed (null: the feed has none).
  get presence() { return app.presence ? app.presence.feed : null; },
};

// ---- Token: Bearer on writes, and the cookie that carries it to the shared event stream -----------

/// `EventSource` cannot send headers, so the token travels in the cookie `diffstreamAuthorization`,
/// which every tab and the shared worker share. An empty token removes the cookie.
function setCookie(token) {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = token
    ? `diffstreamAuthorization=${encodeURIComponent(token)}; path=/; SameSite=Strict${secure}`
    : `diffstreamAuthorization=; path=/; SameSite=Strict; Max-Age=0${secure}`;
}

tokenInput.value = localStorage.getItem('diffstream-token') || '';
const savedToken = tokenInput.value.trim();
if (savedToken) setCookie(savedToken);
$('token-set').hidden = !savedToken;
// `?streams=worker|tab|own` picks where the shared stream is held (the tests run each path).
const mode = new URLSearchParams(location.search).get('streams') || undefined;
// `?poll=week,forecast` (or `?poll=*`): those feeds through their cacheable log, for the page behind a CDN
// (docs/client-js.md, "Behind a CDN").
const polled = (new URLSearchParams(location.search).get('poll') || '').split(',').filter(Boolean);
// Presence feeds (who is watching) have no log: event stream only (docs/protocol.md "Who is here").
const poll = polled.includes('*') ? (feed) => !/^_presence[.-]/.test(feed) : polled;
const connection = connect({ mode, token: savedToken || null, poll, onError: (detail) => showError(`Could not ${words(detail.action)}: ${detail.message}`) });
window.diffstreamStreams = connection.streams; // the transport, for the tests of the shared connection

function saveToken() {
  const value = tokenInput.value.trim();
  if (value) localStorage.setItem('diffstream-token', value);
  else localStorage.removeItem('diffstream-token');
  $('token-set').hidden = !value;
  setCookie(value);
  return value;
}
tokenInput.addEventListener('input', saveToken);
const applyToken = () => {
  connection.setToken(saveToken() || null);
  connection.retry();
  window.diffstreamStreams = connection.streams;
};
tokenInput.addEventListener('change', applyToken);
$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  applyToken();
  event.target.closest('details').open = false;
});
const askForToken = () => { document.querySelector('details.token').open = true; };

// ---- Status, notices, errors ---------------------------------------------------------------------

function setState(state) {
  app.state = state;
  $('status').dataset.state = state;
  $('status').textContent = state;
}
const showNotice = (text) => { $('notice').textContent = text || ''; $('notice').hidden = !text; };
/// The marker over a feed whose server cannot reach Redis: the last state stays on screen, marked.
function showStale(stale) {
  $('stale').hidden = !stale;
  $('stale-detail').textContent = stale && stale.detail ? ` (${stale.detail})` : '';
}
function showError(text) {
  $('error-text').textContent = text || '';
  $('error').hidden = !text;
  if (text && / \((set a token|check the token)\)$/.test(text)) { askForToken(); tokenInput.focus(); }
}
$('error-close').addEventListener('click', () => showError(null));
const announce = (text) => { if (text) $('announcer').textContent = text; };

const OP_WORDS = {
  insert: 'inserted', delete: 'deleted', move: 'moved', update: 'updated',
  insertSection: 'added', deleteSection: 'removed', moveSection: 'moved', updateSection: 'updated',
};
/// "2 inserted, 1 moved, 1 section added": a short summary of a batch for the live region.
function summary(ops) {
  const counts = new Map();
  for (const op of ops) counts.set(op.op, (counts.get(op.op) || 0) + 1);
  return [...counts].map(([op, n]) => {
    const noun = op.endsWith('Section') ? (n === 1 ? ' section' : ' sections') : '';
    return `${n}${noun} ${OP_WORDS[op] || op}`;
  }).join(', ');
}

const REFUSED = ['error', 'forbidden', 'unauthorized', 'expired', 'deleted'];

/// What the feed's subscription says, on the status badge and in the notice.
function onChange(change, subscription) {
  const feed = app.feed;
  $('version').textContent = subscription.version ?? '';
  switch (change.type) {
    case 'snapshot': {
      const resynced = change.resynced || app.state === 'reconnecting' || app.state === 'resyncing';
      showNotice(null);
      setState(subscription.stale ? 'unavailable' : resynced ? 'resynced' : 'live');
      announce(resynced ? `Resynced ${feed} at version ${subscription.version}` : `${feed} loaded`);
      break;
    }
    case 'batch':
      if (app.state !== 'live' && !subscription.stale) setState('live');
      announce(summary(change.ops));
      break;
    case 'resync':
      setState('resyncing');
      break;
    case 'state': // the transport: connecting, open, retrying, unreachable (no answer to several tries), closed
      if (change.state === 'retrying' && !REFUSED.includes(app.state)) setState('reconnecting');
      else if (change.state === 'unreachable' && !REFUSED.includes(app.state)) {
        const detail = change.detail || 'no answer from the server (still trying)';
        setState('unreachable');
        showNotice(`${detail.charAt(0).toUpperCase()}${detail.slice(1)}.`);
      } else if (change.state === 'open' && (app.state === 'reconnecting' || app.state === 'unreachable')) {
        if (app.state === 'unreachable') showNotice(null);
        if (subscription.version !== null) setState(subscription.stale ? 'unavailable' : 'live');
        else setState('connecting'); // its snapshot is on the way
      }
      break;
    case 'unavailable':
      setState('unavailable');
      showStale(subscription.stale);
      announce(`Redis is unavailable: ${feed} shows its last state`);
      break;
    case 'available':
      setState('live');
      showStale(null);
      announce(`${feed} is available again`);
      break;
    case 'deleted':
      showStale(null);
      setState('deleted');
      showNotice(`The feed “${feed}” was deleted.`);
      announce(`The feed ${feed} was deleted`);
      break;
    case 'notfound':
      setState('error');
      showNotice(`There is no feed “${feed}” (yet). Checking again…`);
      break;
    case 'forbidden':
      setState('forbidden');
      showNotice(`Your token does not allow reading the feed “${feed}”.`);
      break;
    case 'unauthorized':
      if (subscription.status === 'expired') {
        setState('expired');
        showNotice(`Your access to the feed “${feed}” expired. Enter a fresh token to continue.`);
      } else {
        const detail = change.data && change.data.detail;
        setState('unauthorized');
        showNotice(`The feed “${feed}” needs a token${detail ? ` (${detail})` : ''}. Enter one under Token.`);
      }
      askForToken();
      break;
    default:
  }
}

// ---- The to-do list: saving a title on leaving it, Escape, reordering ----------------------------

feedEl.addEventListener('focusout', (event) => {
  const input = event.target;
  if (!input.classList.contains('todo-title') || input.value === input.dsValue || !input.value.trim()) return;
  input.form.requestSubmit();
});
feedEl.addEventListener('keydown', (event) => {
  const input = event.target;
  if (event.key !== 'Escape' || !input.classList.contains('todo-title')) return;
  input.value = input.dsValue ?? input.value;
  input.blur();
});

/// Moves a to-do before another (null: to the end), as the to-do view model's `move` action takes it.
async function moveTodo(id, before) {
  try {
    await action(app.feed, 'move', { id, before });
    showError(null);
  } catch (error) {
    showError(`Could not move: ${error.message}`);
  }
}

feedEl.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-move]');
  if (!button) return;
  const li = button.closest('[data-item-id]');
  const siblings = [...li.parentElement.children];
  const index = siblings.indexOf(li);
  if (button.dataset.move === 'up' && index > 0) moveTodo(li.dataset.itemId, siblings[index - 1].dataset.itemId);
  if (button.dataset.move === 'down' && index < siblings.length - 1) moveTodo(li.dataset.itemId, siblings[index + 2]?.dataset.itemId ?? null);
});

let dragged = null;
feedEl.addEventListener('dragstart', (event) => {
  const li = event.target.closest && event.target.closest('li.is-todo');
  if (!li) return;
  dragged = li.dataset.itemId;
  event.dataTransfer.effectAllowed = 'move';
  event.dataTransfer.setData('text/plain', dragged);
});
feedEl.addEventListener('dragover', (event) => {
  if (dragged && event.target.closest && event.target.closest('li.is-todo, ul')) event.preventDefault();
});
feedEl.addEventListener('drop', (event) => {
  if (!dragged) return;
  event.preventDefault();
  const target = event.target.closest('li.is-todo');
  const id = dragged;
  dragged = null;
  if (target && target.dataset.itemId !== id) moveTodo(id, target.dataset.itemId);
  else if (!target) moveTodo(id, null);
});
feedEl.addEventListener('dragend', () => { dragged = null; });

// ---- The feed shown, and the picker ---------------------------------------------------------------

const picker = $('feed-picker');
function addFeedOption(name) {
  if (![...picker.options].some((o) => o.value === name)) picker.append(new Option(name, name));
}

async function loadCatalog() {
  const list = await connection.refreshCatalog();
  app.catalog = new Map((Array.isArray(list) ? list : []).map((entry) => [entry.feed, entry]));
  for (const [name, entry] of app.catalog) if (entry.kind !== 'family') addFeedOption(name);
}

async function showFeed(feed) {
  await loadCatalog();
  // The demo opens on home (the feed that changes by itself), else the first feed the server lists.
  feed = feed || (app.catalog.has('home') ? 'home' : app.catalog.keys().next().value);
  if (!feed) { showNotice('The server has no feeds yet. Create one with PUT /feeds/{name}.'); return; }
  if (app.region) app.region.close();
  app.feed = feed;
  addFeedOption(feed);
  picker.value = feed;
  const url = new URL(location.href);
  url.searchParams.set('feed', feed);
  history.replaceState(null, '', url);
  document.title = `${feed} · DiffStream`;
  showTry(feed);
  feedEl.setAttribute('aria-label', `Feed ${feed}`);
  feedEl.replaceChildren();
  showNotice(null);
  showStale(null);
  showError(null);
  $('version').textContent = '';
  setState('connecting');
  const bar = $('actions');
  const forms = await renderActions(bar, feed);
  for (const form of forms) form.classList.add('bar-action');
  for (const button of bar.querySelectorAll('.ds-action-button')) button.classList.add('action-button');
  for (const input of bar.querySelectorAll('.ds-action-input')) input.classList.add('action-input');
  app.region = render(feedEl, feed, {
    hooks: hooksFor(feed), sectionHook, onChange, animate: () => $('animate').checked,
  });
  await showPresence(feed);
}

// ---- Who is watching: the feed's presence feed, one more feed to render ---------------------------

/// The presence feed of `feed` (docs/protocol.md "Who is here"), or null when it has none: `GET /feeds`
/// names it in the feed's entry; a family's member is not listed, so its document's header names it.
async function presenceFeedOf(feed) {
  const entry = connection.entryOf(feed);
  if (!entry) return null;
  if (entry.kind !== 'family') return entry.presence || null;
  try {
    const token = tokenInput.value.trim();
    const response = await fetch(`/feeds/${encodeURIComponent(feed)}`, {
      method: 'HEAD', headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
    return response.ok ? response.headers.get('DiffStream-Presence') : null;
  } catch (_) {
    return null;
  }
}

/// Shows who is watching `feed` in the bar, with the templates of #presence-looks: the count, and an
/// avatar (and the name, under --presence-names) per user. Hidden when the feed has no presence feed or
/// it is refused (its reader's rights are the feed's; past the server's cap it has none).
async function showPresence(feed) {
  const box = $('presence');
  if (app.presence) app.presence.close();
  app.presence = null;
  box.hidden = true;
  box.replaceChildren();
  const name = await presenceFeedOf(feed);
  if (!name || app.feed !== feed) return;
  app.presence = render(box, name, {
    ...presenceHooks,
    templates: $('presence-looks').content,
    animate: false,
    onChange(change) {
      if (change.type === 'snapshot') box.hidden = false;
      else if (['notfound', 'forbidden', 'unauthorized', 'deleted'].includes(change.type)) box.hidden = true;
    },
  });
}

/// The feeds the curl lines follow: the one shown and, for a family's member, a second user's, so
/// that two users' own feeds are side by side (`home.alice`, `home.bob`).
function tryFeeds(feed, entry) {
  if (!entry || entry.kind !== 'family') return [feed];
  const other = [`${entry.family}.alice`, `${entry.family}.bob`].find((name) => name !== feed);
  return [feed, other];
}

/// One line under the bar: what is live here and the curl commands that follow the feed shown.
function showTry(feed) {
  const entry = connection.entryOf(feed);
  const live = feed === 'home' || feed === 'week' ? 'changes every few seconds with --demo'
    : entry && entry.kind === 'family' ? `the home feed of one user, made for them on first use (another user: ?user=NAME); PATCH it`
    : entry && entry.kind === 'viewModel' ? 'a view model: use its actions above, or POST them'
    : 'a snapshot feed: PUT a new snapshot and watch the batch arrive';
  $('try-live').textContent = `${feed}: ${live}. Try it with curl:`;
  $('try-command').textContent = tryFeeds(feed, entry)
    .map((name) => `curl -N ${new URL(`/feeds/${encodeURIComponent(name)}/events`, location.href)}`).join('\n');
}

picker.addEventListener('change', () => showFeed(picker.value));
document.addEventListener('diffstream:action', () => showError(null));

showFeed(app.feed);
