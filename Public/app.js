// DiffStream page: subscribes to a feed's event stream and applies each batch to the DOM, op by op.
'use strict';

const $ = (id) => document.getElementById(id);
const feedEl = $('feed');
const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)');
const known = ['home', 'week', 'blackjack', 'forecast'];

const app = { feed: new URLSearchParams(location.search).get('feed') || 'home', version: null, state: 'connecting', source: null, resyncing: false };
window.diffstream = {
  get feed() { return app.feed; },
  get version() { return app.version; },
  get state() { return app.state; },
};

// ---- Connection -------------------------------------------------------------------------------

function setState(state) {
  app.state = state;
  const el = $('status');
  el.dataset.state = state;
  el.textContent = state;
}

function setVersion(version) {
  app.version = version;
  $('version').textContent = String(version);
}

function connect() {
  if (app.source) app.source.close();
  const source = new EventSource(`/feeds/${encodeURIComponent(app.feed)}/events`);
  app.source = source;
  source.addEventListener('snapshot', (event) => {
    const data = JSON.parse(event.data);
    renderSnapshot(data);
    setVersion(data.version);
    setState(app.resyncing || app.state === 'reconnecting' ? 'resynced' : 'live');
    app.resyncing = false;
  });
  source.addEventListener('batch', (event) => {
    const data = JSON.parse(event.data);
    if (data.from !== app.version) return resync();
    applyBatch(data.ops);
    setVersion(data.version);
    if (app.state !== 'live') setState('live');
  });
  source.addEventListener('deleted', () => {
    source.close();
    setState('deleted');
    announce(`Feed ${app.feed} was deleted`);
  });
  source.onerror = () => {
    if (app.source !== source || app.state === 'deleted') return;
    setState('reconnecting');
    // EventSource retries by itself while CONNECTING; after a refused response it gives up: start over.
    if (source.readyState === EventSource.CLOSED) setTimeout(() => app.source === source && connect(), 2000);
  };
}

/// Our version and the batch's `from` differ: start a fresh subscription, which begins with a snapshot.
function resync() {
  app.resyncing = true;
  connect();
}

// ---- Rendering --------------------------------------------------------------------------------

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/// Sets text only when it differs, so an update touches only what changed.
function setText(node, text) {
  const value = text === undefined || text === null ? '' : String(text);
  if (node.textContent !== value) node.textContent = value;
}

function hue(id) {
  let h = 2166136261;
  for (const c of String(id)) h = Math.imul(h ^ c.codePointAt(0), 16777619) >>> 0;
  return h % 360;
}

// Each kind: `build(li, model, id)` creates the element's parts once; `patch(li, model)` updates them.
const kinds = {
  banner: {
    build(li) { li.append(el('strong', 'title'), el('span', 'subtitle')); },
    patch(li, m) { setText(li.querySelector('.title'), m.title); setText(li.querySelector('.subtitle'), m.subtitle); },
  },
  image: {
    build(li, m, id, kind) {
      const video = kind === 'video';
      const poster = el('div', 'poster');
      const h = hue(m.id || id);
      poster.style.background = `linear-gradient(135deg, hsl(${h} 60% 55%), hsl(${(h + 60) % 360} 55% 35%))`;
      if (video) poster.append(el('span', 'play', '▶'));
      poster.setAttribute('role', 'img');
      const note = el('input', 'note');
      note.placeholder = 'Add a note';
      note.setAttribute('aria-label', 'Note');
      li.append(poster, el('span', 'title'), note);
    },
    patch(li, m) {
      setText(li.querySelector('.title'), m.title);
      const poster = li.querySelector('.poster');
      if (poster.getAttribute('aria-label') !== m.title) poster.setAttribute('aria-label', m.title || '');
    },
  },
  video: {
    build(li, m, id) { kinds.image.build(li, m, id, 'video'); },
    patch(li, m) { kinds.image.patch(li, m); },
  },
  card: {
    build(li) {
      const face = el('div', 'card-face');
      face.append(el('span', 'rank'), el('span', 'suit'));
      li.append(face);
    },
    patch(li, m) {
      const face = li.querySelector('.card-face');
      face.classList.toggle('red', m.suit === '♥' || m.suit === '♦');
      setText(li.querySelector('.rank'), m.rank);
      setText(li.querySelector('.suit'), m.suit);
      const label = `${m.rank} of ${m.suit}`;
      if (face.getAttribute('aria-label') !== label) face.setAttribute('aria-label', label);
    },
  },
  day: {
    build(li) { li.append(el('span', 'icon'), el('span', 'title'), el('span', 'temps'), el('span', 'condition')); },
    patch(li, m) {
      setText(li.querySelector('.icon'), m.icon);
      setText(li.querySelector('.title'), m.name);
      setText(li.querySelector('.temps'), `${m.high}° / ${m.low}°`);
      setText(li.querySelector('.condition'), m.condition);
      if ('selected' in m) {
        li.classList.toggle('selected', !!m.selected);
        if (li.getAttribute('aria-pressed') !== String(!!m.selected)) li.setAttribute('aria-pressed', String(!!m.selected));
      }
    },
  },
  hour: {
    build(li) { li.append(el('div', 'hour'), el('div', 'icon'), el('div', 'temp')); },
    patch(li, m) {
      setText(li.querySelector('.hour'), m.hour);
      setText(li.querySelector('.icon'), m.icon);
      setText(li.querySelector('.temp'), `${m.temp}°`);
    },
  },
  json: {
    build(li, m, id, kind) { li.append(el('span', 'kind-label', kind), el('pre', 'json')); },
    patch(li, m) { setText(li.querySelector('.json'), JSON.stringify(m, null, 2)); },
  },
};

function fillItem(li, item) {
  const kind = kinds[item.kind] && item.kind !== 'json' ? item.kind : 'json';
  const model = item.model && typeof item.model === 'object' ? item.model : { value: item.model };
  if (li.dataset.kind !== item.kind) {
    li.replaceChildren();
    li.dataset.kind = item.kind;
    kinds[kind].build(li, model, item.id, item.kind);
  }
  kinds[kind].patch(li, model);
}

function makeItem(item, sectionId) {
  const li = el('li');
  li.dataset.itemId = item.id;
  if (item.kind === 'day' && sectionId === 'daily') {
    li.setAttribute('role', 'button');
    li.tabIndex = 0;
  }
  fillItem(li, item);
  return li;
}

function patchSection(section, model) {
  const h2 = section.querySelector('h2');
  const m = model && typeof model === 'object' ? model : {};
  setText(h2.querySelector('.section-title'), m.title);
  h2.querySelector('.star').hidden = !m.isFeatured;
  const meta = ['score', 'remaining', 'status'].filter((k) => k in m).map((k) => `${k}: ${m[k]}`).join(' · ');
  setText(h2.querySelector('.meta'), meta);
  if (app.feed === 'blackjack') $('deal').hidden = false;
}

function makeSection(section) {
  const node = el('section');
  node.dataset.sectionId = section.id;
  const h2 = el('h2');
  const star = el('span', 'star', '★');
  star.setAttribute('aria-label', 'featured');
  h2.append(el('span', 'section-title'), star, el('span', 'meta'));
  node.append(h2, el('ul'));
  patchSection(node, section.model);
  return node;
}

function renderSnapshot(data) {
  const sections = data.sections.map((section) => {
    const node = makeSection(section);
    node.querySelector('ul').append(...(section.items || []).map((item) => makeItem(item, section.id)));
    return node;
  });
  feedEl.replaceChildren(...sections);
  feedEl.dataset.feed = data.feed;
  feedEl.setAttribute('aria-busy', 'false');
}

// ---- Applying batches -------------------------------------------------------------------------

const sectionNode = (id) => feedEl.querySelector(`:scope > section[data-section-id="${CSS.escape(id)}"]`);
const itemNode = (id) => feedEl.querySelector(`li[data-item-id="${CSS.escape(id)}"]`);

function need(node, what) {
  if (!node) throw new Error(`unknown ${what}`);
  return node;
}

const animating = () => $('animate').checked && !reducedMotion.matches;

function applyOp(op, inserted, removed) {
  switch (op.op) {
    case 'deleteSection': removed.push(need(sectionNode(op.section), op.section)); break;
    case 'insertSection': {
      const node = makeSection(op.section);
      feedEl.insertBefore(node, op.before === null ? null : need(sectionNode(op.before), op.before));
      inserted.push(node);
      break;
    }
    case 'moveSection':
      feedEl.insertBefore(need(sectionNode(op.section), op.section), op.before === null ? null : need(sectionNode(op.before), op.before));
      break;
    case 'updateSection': patchSection(need(sectionNode(op.section), op.section), op.model); break;
    case 'delete': removed.push(need(itemNode(op.item), op.item)); break;
    case 'insert': {
      const list = need(sectionNode(op.section), op.section).querySelector('ul');
      const node = makeItem(op.item, op.section);
      list.insertBefore(node, op.before === null ? null : need(itemNode(op.before), op.before));
      inserted.push(node);
      break;
    }
    case 'move': {
      const list = need(sectionNode(op.section), op.section).querySelector('ul');
      list.insertBefore(need(itemNode(op.item), op.item), op.before === null ? null : need(itemNode(op.before), op.before));
      break;
    }
    case 'update': fillItem(need(itemNode(op.item), op.item), { id: op.item, kind: op.kind, model: op.model }); break;
    default: throw new Error(`unknown op ${op.op}`);
  }
  // Removals happen at once (the DOM order is final right away); a ghost copy fades out.
  while (removed.length) {
    const node = removed.pop();
    if (animating()) fadeOut(node);
    node.remove();
  }
}

function fadeOut(node) {
  const rect = node.getBoundingClientRect();
  if (!rect.width) return;
  const ghost = node.cloneNode(true);
  ghost.removeAttribute('data-item-id');
  ghost.removeAttribute('data-section-id');
  ghost.querySelectorAll('[data-item-id]').forEach((child) => child.removeAttribute('data-item-id'));
  ghost.classList.add('ghost');
  Object.assign(ghost.style, { left: `${rect.left}px`, top: `${rect.top}px`, width: `${rect.width}px`, height: `${rect.height}px` });
  document.body.append(ghost);
  ghost.animate([{ opacity: 1 }, { opacity: 0, transform: 'scale(.95)' }], { duration: 250, easing: 'ease-in' }).onfinish = () => ghost.remove();
}

/// FLIP: remember where everything was, apply the batch, then animate each element from its old place.
function applyBatch(ops) {
  const animate = animating();
  const before = new Map();
  if (animate) {
    feedEl.querySelectorAll('[data-item-id], [data-section-id]').forEach((node) => before.set(node, node.getBoundingClientRect()));
  }
  const inserted = [];
  try {
    for (const op of ops) applyOp(op, inserted, []);
  } catch (error) {
    console.warn('batch could not be applied, resyncing:', error.message);
    return resync();
  }
  announce(summary(ops));
  if (!animate) return;
  for (const [node, old] of before) {
    if (!node.isConnected) continue;
    const now = node.getBoundingClientRect();
    const dx = old.left - now.left;
    const dy = old.top - now.top;
    if (Math.abs(dx) > 0.5 || Math.abs(dy) > 0.5) {
      node.animate([{ transform: `translate(${dx}px, ${dy}px)` }, { transform: 'none' }], { duration: 300, easing: 'ease-out' });
    }
  }
  for (const node of inserted) node.animate([{ opacity: 0, transform: 'scale(.96)' }, { opacity: 1, transform: 'none' }], { duration: 250, easing: 'ease-out' });
}

function summary(ops) {
  const names = { insert: 'inserted', delete: 'deleted', move: 'moved', update: 'updated', insertSection: 'sections added', deleteSection: 'sections removed', moveSection: 'sections moved', updateSection: 'headers updated' };
  const counts = {};
  for (const op of ops) counts[op.op] = (counts[op.op] || 0) + 1;
  return Object.entries(counts).map(([op, n]) => `${n} ${names[op] || op}`).join(', ');
}

function announce(text) {
  if (text) $('announcer').textContent = text;
}

// ---- Actions ----------------------------------------------------------------------------------

async function post(path, body) {
  const headers = { 'Content-Type': 'application/json' };
  const token = $('token').value.trim();
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(path, { method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const error = $('error');
  if (response.ok) {
    error.hidden = true;
    return;
  }
  let detail = `${response.status} ${response.statusText}`;
  try {
    const json = await response.json();
    detail = `${json.error}: ${json.detail}`;
  } catch (_) { /* not JSON */ }
  error.textContent = detail;
  error.hidden = false;
}

$('deal').addEventListener('click', () => post('/feeds/blackjack/actions/deal'));

function selectDay(target) {
  const li = target.closest('[data-section-id="daily"] li[data-item-id]');
  if (li) post('/feeds/forecast/actions/select', { day: li.dataset.itemId });
}
feedEl.addEventListener('click', (event) => selectDay(event.target));
feedEl.addEventListener('keydown', (event) => {
  if ((event.key === 'Enter' || event.key === ' ') && event.target.matches('li[role="button"]')) {
    event.preventDefault();
    selectDay(event.target);
  }
});

// ---- Start ------------------------------------------------------------------------------------

const token = $('token');
token.value = localStorage.getItem('diffstream-token') || '';
token.addEventListener('change', () => localStorage.setItem('diffstream-token', token.value.trim()));

const picker = $('feed-picker');
if (!known.includes(app.feed)) picker.append(new Option(app.feed, app.feed));
picker.value = app.feed;
picker.addEventListener('change', () => {
  app.feed = picker.value;
  const url = new URL(location.href);
  url.searchParams.set('feed', app.feed);
  history.replaceState(null, '', url);
  $('deal').hidden = app.feed !== 'blackjack';
  feedEl.replaceChildren();
  feedEl.dataset.feed = app.feed;
  app.version = null;
  setState('connecting');
  connect();
});
feedEl.dataset.feed = app.feed;
$('deal').hidden = app.feed !== 'blackjack';
connect();
