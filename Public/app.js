// DiffStream page: subscribes to one feed's event stream (shared with the other tabs, see streams.js) and
// applies each batch to the DOM, op by op.
'use strict';

const $ = (id) => document.getElementById(id);
const feedEl = $('feed');
const MAX_ANIMATED = 600; // with more sections and items than this, changes are applied without animation
const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)');

const app = {
  feed: new URLSearchParams(location.search).get('feed'), // null: the first feed the server lists
  version: null,
  state: 'connecting',
  stream: null,     // the current subscription (diffstreamStreams.subscribe)
  resyncing: false, // a fresh snapshot was asked for because a batch did not follow our version
  catalog: new Map(), // feed name -> its entry in GET /feeds: {feed, version, kind, actions?}
};
const sections = new Map(); // section id -> <section>
const items = new Map();    // item id -> <li>

window.diffstream = {
  get version() { return app.version; },
  get feed() { return app.feed; },
  get state() { return app.state; },
};

// ---- DOM helpers: every setter writes only when the value differs ---------------------------------

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function setText(node, value) {
  const text = value === undefined || value === null ? '' : String(value);
  if (node.textContent !== text) node.textContent = text;
}

function setAttr(node, name, value) {
  if (value === null || value === undefined) node.removeAttribute(name);
  else if (node.getAttribute(name) !== String(value)) node.setAttribute(name, value);
}

const setHidden = (node, hidden) => { if (node.hidden !== hidden) node.hidden = hidden; };
const setClass = (node, name, on) => { if (node.classList.contains(name) !== on) node.classList.toggle(name, on); };

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
const part = (node, name) => node.querySelector(`.${name}`);
const deg = (value) => (value === undefined || value === null ? '' : `${value}°`);

/// A stable hue for an id, so a poster always gets the same colours.
function hue(id) {
  let h = 2166136261;
  for (const c of String(id)) h = Math.imul(h ^ c.codePointAt(0), 16777619);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  return ((h ^ (h >>> 12)) >>> 0) % 360;
}

// ---- Templates, one per kind ----------------------------------------------------------------------
// fits(model): can this template show the model; build(li, ctx): make the parts once;
// text(model, kind): the text of each part, by class; patch(li, model, kind): anything else.

const templates = {
  banner: {
    fits: (m) => 'title' in m,
    build: (li) => li.append(el('strong', 'title'), el('span', 'subtitle')),
    text: (m) => ({ title: m.title, subtitle: m.subtitle }),
  },
  media: { // image and video share this template, so a change of kind keeps the note input
    fits: (m) => 'title' in m || 'id' in m,
    build(li) {
      const poster = el('div', 'poster');
      poster.setAttribute('role', 'img');
      poster.append(el('span', 'play', '▶'));
      const note = el('input', 'note');
      Object.assign(note, { type: 'text', placeholder: 'Add a note', autocomplete: 'off' });
      li.append(poster, el('span', 'title'), note);
    },
    text: (m) => ({ title: m.title }),
    patch(li, m, kind) {
      const poster = part(li, 'poster');
      setAttr(poster, 'style', `--hue: ${hue(m.id ?? li.dataset.itemId)}`); // the url is never fetched
      setAttr(poster, 'aria-label', `${kind === 'video' ? 'Video' : 'Image'}: ${m.title ?? ''}`);
      setHidden(part(li, 'play'), kind !== 'video');
      setAttr(part(li, 'note'), 'aria-label', `Note for ${m.title ?? 'this item'}`);
    },
  },
  card: {
    fits: (m) => 'rank' in m || 'suit' in m,
    build(li) {
      const face = el('div', 'face');
      face.append(el('span', 'corner'), el('span', 'pip'), el('span', 'corner bottom'));
      li.append(face, el('span', 'value'));
    },
    text: (m) => ({ corner: `${m.rank ?? ''}${m.suit ?? ''}`, pip: m.suit, value: m.value === undefined ? '' : `value ${m.value}` }),
    patch(li, m) {
      const face = part(li, 'face');
      setClass(face, 'red', m.suit === '♥' || m.suit === '♦');
      setAttr(face, 'aria-label', `${m.rank ?? ''} ${m.suit ?? ''}`.trim());
    },
  },
  day: {
    fits: (m) => 'name' in m,
    build(li, ctx) {
      // A day with one action of its own (e.g. selecting it) is a real button: Enter and Space work too.
      const button = Boolean(ctx.primary);
      const body = el(button ? 'button' : 'div', 'body');
      if (button) body.type = 'button';
      const temps = el('span', 'temps');
      temps.append(el('span', 'high'), el('span', 'low'));
      body.append(el('span', 'icon'), el('span', 'title'), el('span', 'condition'), temps);
      li.append(body);
    },
    text: (m) => ({ icon: m.icon, title: m.name, condition: m.condition, high: deg(m.high), low: deg(m.low) }),
    patch(li, m) {
      setClass(li, 'selected', m.selected === true);
      const body = part(li, 'body');
      if (body.tagName === 'BUTTON') setAttr(body, 'aria-pressed', String(m.selected === true));
    },
  },
  hour: {
    fits: (m) => 'hour' in m,
    build: (li) => li.append(el('span', 'time'), el('span', 'icon'), el('span', 'temp')),
    text: (m) => ({ time: m.hour, icon: m.icon, temp: deg(m.temp) }),
  },
  todo: {
    fits: (m) => 'title' in m,
    build: (li) => li.append(el('span', 'check'), el('span', 'title')),
    text: (m) => ({ check: m.done ? '✓' : '○', title: m.title }),
    patch(li, m) {
      setClass(li, 'done', m.done === true);
      setAttr(part(li, 'check'), 'aria-label', m.done ? 'done' : 'to do');
    },
  },
  json: { // any other kind, or a model that the kind's template cannot show
    fits: () => true,
    build: (li) => li.append(el('span', 'kind-label'), el('strong', 'title'), el('pre', 'json')),
    text: (m, kind) => ({
      'kind-label': kind, title: isObject(m) && typeof m.title === 'string' ? m.title : '', json: JSON.stringify(m, null, 2),
    }),
  },
};

function templateFor(kind, model) {
  const name = kind === 'image' || kind === 'video' ? 'media' : kind;
  return Object.hasOwn(templates, name) && isObject(model) && templates[name].fits(model) ? name : 'json';
}

/// Fills an item in place: the <li> and its input stay; only the text and attributes that changed are written.
function fillItem(li, item, section) {
  const model = item.model === undefined ? null : item.model;
  const name = templateFor(item.kind, model);
  const template = templates[name];
  setAttr(li, 'data-kind', item.kind);
  if (li.dataset.template !== name) { // another template: its parts are built anew
    li.replaceChildren();
    li.dataset.template = name;
    li.className = `item is-${name}`;
    const actions = itemActions(item.kind);
    template.build(li, { id: item.id, kind: item.kind, section, primary: primaryAction(actions) });
    buildItemActions(li, actions);
  }
  for (const [className, value] of Object.entries(template.text(model, item.kind))) {
    for (const node of li.querySelectorAll(`.${className}`)) setText(node, value);
  }
  if (template.patch) template.patch(li, model, item.kind);
}

function makeItem(item, section) {
  const li = el('li');
  li.dataset.itemId = item.id;
  fillItem(li, item, section);
  return li;
}

// ---- Sections: an <h2> from the model's title (a star when featured, chips for a game) and a <ul> ---

const CHIPS = { score: (v) => `Score ${v}`, remaining: (v) => `${v} left`, status: String };

function makeSection(section) {
  const node = el('section');
  node.dataset.sectionId = section.id;
  const h2 = el('h2');
  h2.append(el('span', 'section-title'), el('span', 'chips'));
  node.append(h2, el('ul'));
  patchSection(node, section.model);
  return node;
}

function patchSection(node, model) {
  const m = isObject(model) ? model : {};
  const h2 = node.firstElementChild;
  const title = typeof m.title === 'string' ? m.title : '';
  setClass(h2, 'untitled', !title); // without a title, the id is there for screen readers only
  setText(part(h2, 'section-title'), title || node.dataset.sectionId);
  let star = part(h2, 'star');
  if (m.isFeatured === true && !star) {
    star = el('span', 'star', '★');
    star.setAttribute('role', 'img');
    star.setAttribute('aria-label', 'featured');
    h2.firstElementChild.after(star);
  } else if (m.isFeatured !== true && star) {
    star.remove();
  }
  const chips = part(h2, 'chips');
  for (const [key, label] of Object.entries(CHIPS)) {
    let chip = chips.querySelector(`[data-key="${key}"]`);
    if (!(key in m)) { if (chip) chip.remove(); continue; }
    if (!chip) { chip = chips.appendChild(el('span', 'chip')); chip.dataset.key = key; }
    setText(chip, label(m[key]));
    if (key === 'status') setAttr(chip, 'data-status', m[key]);
  }
}

function need(map, id, what) {
  const node = map.get(id);
  if (!node) throw new Error(`unknown ${what} ${id}`);
  return node;
}
const anchor = (map, id) => (id === null || id === undefined ? null : need(map, id, 'anchor'));
const list = (sectionId) => need(sections, sectionId, 'section').lastElementChild;
const sectionOf = (li) => li.closest('section').dataset.sectionId;

// ---- Snapshots: every element whose id survives is reused, so notes and focus survive a resync ----

/// Puts `nodes` into `parent` in this order with few moves; any other children end up after them.
function reorder(parent, nodes) {
  let cursor = parent.firstChild;
  for (const node of nodes) {
    if (node === cursor) cursor = cursor.nextSibling;
    else parent.insertBefore(node, cursor);
  }
}

function renderSnapshot(data, fx) {
  const next = data.sections || [];
  const sectionIds = new Set(next.map((s) => s.id));
  const itemIds = new Set(next.flatMap((s) => (s.items || []).map((i) => i.id)));
  const oldSections = new Map([...feedEl.querySelectorAll(':scope > section')].map((n) => [n.dataset.sectionId, n]));
  const oldItems = new Map([...feedEl.querySelectorAll('li[data-item-id]')].map((n) => [n.dataset.itemId, n]));
  for (const [id, li] of oldItems) if (!itemIds.has(id) && sectionIds.has(sectionOf(li))) removeNode(li, fx);
  sections.clear();
  items.clear();
  const nodes = next.map((section) => {
    let node = oldSections.get(section.id);
    if (node) patchSection(node, section.model);
    else fx.inserted.push(node = makeSection(section));
    sections.set(section.id, node);
    reorder(node.lastElementChild, (section.items || []).map((item) => {
      let li = oldItems.get(item.id);
      if (li) fillItem(li, item, section.id);
      else fx.inserted.push(li = makeItem(item, section.id));
      items.set(item.id, li);
      return li;
    }));
    return node;
  });
  for (const [id, node] of oldSections) if (!sectionIds.has(id)) removeNode(node, fx);
  reorder(feedEl, nodes);
}

// ---- Batches: each op applied to the DOM, in order; anything unexpected throws (and we resync) ----

function applyOp(op, fx) {
  switch (op.op) {
    case 'deleteSection': {
      const node = need(sections, op.section, 'section');
      for (const li of node.querySelectorAll('li[data-item-id]')) items.delete(li.dataset.itemId);
      sections.delete(op.section);
      return removeNode(node, fx);
    }
    case 'insertSection': {
      if (sections.has(op.section.id)) throw new Error(`duplicate section ${op.section.id}`);
      const node = feedEl.insertBefore(makeSection(op.section), anchor(sections, op.before));
      sections.set(op.section.id, node);
      return fx.inserted.push(node);
    }
    case 'moveSection':
      return feedEl.insertBefore(need(sections, op.section, 'section'), anchor(sections, op.before));
    case 'updateSection':
      return patchSection(need(sections, op.section, 'section'), op.model);
    case 'delete': {
      const li = need(items, op.item, 'item');
      items.delete(op.item);
      return removeNode(li, fx);
    }
    case 'insert': {
      if (items.has(op.item.id)) throw new Error(`duplicate item ${op.item.id}`);
      const li = list(op.section).insertBefore(makeItem(op.item, op.section), anchor(items, op.before));
      items.set(op.item.id, li);
      return fx.inserted.push(li);
    }
    case 'move':
      return list(op.section).insertBefore(need(items, op.item, 'item'), anchor(items, op.before));
    case 'update': {
      const li = need(items, op.item, 'item');
      return fillItem(li, { id: op.item, kind: op.kind, model: op.model }, sectionOf(li));
    }
    default:
      throw new Error(`unknown op ${op.op}`);
  }
}

// ---- Animation: inserts fade in, removed elements leave a fading ghost, moves FLIP ------------------

/// Measures every section and item, runs `mutate(fx)`, keeps the focus, then animates the difference.
function transition(mutate) {
  const shown = app.version !== null; // the first snapshot of a feed just appears
  const animate = shown && $('animate').checked && !reducedMotion.matches && sections.size + items.size <= MAX_ANIMATED;
  const fx = { animate, rects: new Map(), inserted: [] };
  if (animate) for (const node of feedEl.querySelectorAll('[data-section-id], [data-item-id]')) fx.rects.set(node, node.getBoundingClientRect());
  const focus = saveFocus();
  mutate(fx);
  restoreFocus(focus);
  if (animate) play(fx);
}

/// Takes a node out of the DOM at once (queries see the final order); a copy fades out where it was.
function removeNode(node, fx) {
  const rect = fx.animate && (fx.rects.get(node) || node.getBoundingClientRect());
  if (rect && rect.width && rect.height) ghost(node, rect);
  node.remove();
}

function ghost(node, rect) {
  const copy = node.cloneNode(true);
  for (const n of [copy, ...copy.querySelectorAll('[id], [data-item-id], [data-section-id]')]) {
    for (const name of ['id', 'data-item-id', 'data-section-id']) n.removeAttribute(name);
  }
  copy.classList.add('ghost');
  copy.setAttribute('aria-hidden', 'true');
  copy.inert = true;
  Object.assign(copy.style, { left: `${rect.left + scrollX}px`, top: `${rect.top + scrollY}px`, width: `${rect.width}px`, height: `${rect.height}px` });
  document.body.append(copy);
  const fade = copy.animate([{ opacity: 1 }, { opacity: 0, transform: 'scale(.92)' }], { duration: 260, easing: 'ease-in' });
  fade.onfinish = fade.oncancel = () => copy.remove();
}

/// FLIP: each element that moved starts at its old place (inverted with a transform) and plays to the new one.
function play(fx) {
  const inserted = new Set(fx.inserted);
  const moved = [...fx.rects].filter(([node]) => node.isConnected && !inserted.has(node));
  for (const [node] of moved) for (const a of node.getAnimations()) if (a.id === 'flip') a.cancel();
  // Sections first: an item in a moving section is only animated by how far it moves within it.
  moved.sort(([a], [b]) => (b.tagName === 'SECTION') - (a.tagName === 'SECTION'));
  const now = new Map(moved.map(([node]) => [node, node.getBoundingClientRect()])); // before any animation starts
  const deltas = new Map();
  for (const [node, old] of moved) {
    const outer = node.tagName === 'LI' && deltas.get(node.closest('section'));
    const dx = old.left - now.get(node).left - (outer ? outer[0] : 0);
    const dy = old.top - now.get(node).top - (outer ? outer[1] : 0);
    if (Math.abs(dx) < 0.5 && Math.abs(dy) < 0.5) continue;
    deltas.set(node, [dx, dy]);
    node.animate([{ transform: `translate(${dx}px, ${dy}px)` }, { transform: 'none' }],
      { id: 'flip', duration: 320, easing: 'cubic-bezier(.2, .8, .2, 1)' });
  }
  for (const node of inserted) { // a new section only fades: a scale would shift the items moving into it
    const scale = node.tagName === 'LI' ? 'scale(.94)' : 'none';
    node.animate([{ opacity: 0, transform: scale }, { opacity: 1, transform: 'none' }], { duration: 260, easing: 'ease-out' });
  }
}

/// Moving an element blurs it: remember the focused element and its selection, and put them back.
function saveFocus() {
  const node = document.activeElement;
  if (!node || !feedEl.contains(node)) return null;
  return { node, selection: typeof node.selectionStart === 'number' ? [node.selectionStart, node.selectionEnd, node.selectionDirection] : null };
}

function restoreFocus(saved) {
  if (!saved || !saved.node.isConnected || document.activeElement === saved.node) return;
  saved.node.focus({ preventScroll: true });
  if (saved.selection) saved.node.setSelectionRange(...saved.selection);
}

// ---- Status and announcements -------------------------------------------------------------------

function setState(state) {
  app.state = state;
  setAttr($('status'), 'data-state', state);
  setText($('status'), state);
}

function setVersion(version) { app.version = version; setText($('version'), version); }

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

const announce = (text) => { if (text) $('announcer').textContent = text; };

const showNotice = (text) => { setText($('notice'), text); setHidden($('notice'), !text); };
const showError = (text) => { setText($('error-text'), text); setHidden($('error'), !text); };

// ---- Connection: one subscription through the shared connection layer (streams.js) --------------

function connect() {
  if (app.stream) app.stream.close();
  app.stream = diffstreamStreams.subscribe(app.feed, {
    onSnapshot, onBatch, onDeleted, onUnauthorized: onExpired, onState: onStreamState,
  });
}

function onSnapshot(data) {
  transition((fx) => renderSnapshot(data, fx));
  refreshSelects();
  feedEl.setAttribute('aria-busy', 'false');
  setVersion(data.version);
  const resynced = app.resyncing || app.state === 'reconnecting';
  app.resyncing = false;
  showNotice(null);
  setState(resynced ? 'resynced' : 'live');
  announce(resynced ? `Resynced ${app.feed} at version ${data.version}` : `${app.feed} loaded`);
}

function onBatch(data) {
  if (app.version === null || data.from !== app.version) return resync();
  transition((fx) => { for (const op of data.ops) applyOp(op, fx); });
  refreshSelects();
  setVersion(data.version);
  if (app.state !== 'live') setState('live');
  announce(summary(data.ops));
}

function onDeleted() {
  app.stream.close();
  transition((fx) => renderSnapshot({ sections: [] }, fx));
  setState('deleted');
  showNotice(`The feed “${app.feed}” was deleted.`);
  announce(`The feed ${app.feed} was deleted`);
}

/// A batch that does not follow our version: a fresh snapshot follows.
function resync() {
  app.resyncing = true;
  app.stream.resync();
}

const askForToken = () => { document.querySelector('details.token').open = true; };

/// The stream's token expired (`event: unauthorized`): the stream waits for a fresh token.
function onExpired() {
  setState('expired');
  showNotice(`Your access to the feed “${app.feed}” expired. Enter a fresh token to continue.`);
  askForToken();
}

/// The stream was refused or dropped (the hub retries by itself, with backoff): say why.
function onStreamState(state, { status, detail }) {
  setState(state);
  if (state === 'error') {
    showNotice(status === 404 ? `There is no feed “${app.feed}” (yet). Checking again…`
      : `The feed “${app.feed}” cannot be shown: ${detail}`);
  } else if (state === 'unauthorized') {
    showNotice(`The feed “${app.feed}” needs a token${detail ? ` (${detail})` : ''}. Enter one under Token.`);
    askForToken();
  } else if (state === 'forbidden') {
    showNotice(`Your token does not allow reading the feed “${app.feed}”.`);
  }
}

// ---- Actions ------------------------------------------------------------------------------------

async function send(what, method, path, body) {
  const headers = body === undefined ? {} : { 'Content-Type': 'application/json' };
  const token = $('token').value.trim();
  if (token) headers.Authorization = `Bearer ${token}`;
  try {
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (response.ok) { showError(null); return true; }
    let message = `the server answered ${response.status} ${response.statusText}`.trim();
    try {
      const json = await response.json();
      if (json && json.error) message = json.detail ? `${json.error} — ${json.detail}` : json.error;
    } catch (_) { /* not JSON */ }
    if (response.status === 403) message += ' (your token does not allow this)';
    if (response.status === 401) {
      message += token ? ' (check the token)' : ' (set a token)';
      document.querySelector('details.token').open = true;
      $('token').focus();
    }
    showError(`Could not ${what}: ${message}`);
  } catch (error) {
    showError(`Could not ${what}: the server did not answer (${error.message}).`);
  }
  return false;
}

$('error-close').addEventListener('click', () => showError(null));

// ---- Actions, as the server declares them ------------------------------------------------------
// GET /feeds lists each hosted feed's actions with their fields. An action whose first required field
// is an item id ({type: "item", itemKind}) is offered on every item of that kind; the others are
// offered in the bar above the feed. Text fields become inputs; other item fields become a <select>.

const feedActions = () => (app.catalog.get(app.feed) || {}).actions || [];
const targetField = (action) => (action.fields || []).find((f) => f.type === 'item' && !f.optional && !f.nullable);
const extraFields = (action, target) => (action.fields || []).filter((f) => f !== target && !(f.optional && f.type === 'item'));

/// The actions offered on items of `kind`.
function itemActions(kind) {
  return feedActions().filter((a) => { const t = targetField(a); return t && t.itemKind === kind; });
}

/// The one action an item of this kind does when clicked: only when it has exactly one, without other fields.
function primaryAction(actions) {
  return actions.length === 1 && extraFields(actions[0], targetField(actions[0])).length === 0 ? actions[0] : null;
}

const words = (name) => name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();

/// An input for one field; `data-field` names it, `data-type` says how to read it.
function fieldInput(field) {
  let input;
  if (field.type === 'item') {
    input = el('select', 'action-input');
    input.dataset.itemKind = field.itemKind;
    input.dataset.nullable = String(field.nullable || field.optional);
    refreshSelect(input);
  } else {
    input = el('input', 'action-input');
    Object.assign(input, { autocomplete: 'off', placeholder: words(field.name) });
    input.type = field.type === 'boolean' ? 'checkbox' : field.type === 'string' ? 'text' : 'number';
  }
  input.dataset.field = field.name;
  input.dataset.type = field.type;
  input.setAttribute('aria-label', words(field.name));
  return input;
}

/// A form for an action: its inputs and a submit button named after it. `target` is an item id field.
function actionForm(action, target, className) {
  const form = el('form', className);
  form.dataset.action = action.name;
  if (target) form.dataset.target = target.name;
  for (const field of extraFields(action, target)) form.append(fieldInput(field));
  const button = el('button', 'action-button', words(action.name));
  button.type = 'submit';
  form.append(button);
  return form;
}

function buildItemActions(li, actions) {
  if (!actions.length || primaryAction(actions)) return;
  const box = el('div', 'item-actions');
  for (const action of actions) box.append(actionForm(action, targetField(action), 'item-action'));
  li.append(box);
}

function renderActionBar() {
  const bar = $('actions');
  bar.replaceChildren(...feedActions().filter((a) => !targetField(a)).map((a) => actionForm(a, null, 'bar-action')));
  setHidden(bar, !bar.firstChild);
}

/// Options of an item <select>: the items of its kind, in order (and "at the end" when it may be null).
function refreshSelect(select) {
  const ids = [...items.values()].filter((li) => li.dataset.kind === select.dataset.itemKind).map((li) => li.dataset.itemId);
  const key = ids.join('\n');
  if (select.dataset.options === key) return;
  const value = select.value;
  select.replaceChildren(...(select.dataset.nullable === 'true' ? [new Option('at the end', '')] : []),
    ...ids.map((id) => new Option(`before ${items.get(id).querySelector('.title')?.textContent || id}`, id)));
  select.dataset.options = key;
  if ([...select.options].some((o) => o.value === value)) select.value = value;
}
const refreshSelects = () => { for (const select of document.querySelectorAll('select[data-item-kind]')) refreshSelect(select); };

/// The JSON body of a form: each input by its field; an item id from the item the form belongs to.
function actionBody(form, li) {
  const body = {};
  if (form.dataset.target && li) body[form.dataset.target] = li.dataset.itemId;
  for (const input of form.querySelectorAll('[data-field]')) {
    const { field, type } = input.dataset;
    if (type === 'boolean') body[field] = input.checked;
    else if (type === 'integer' || type === 'number') { if (input.value !== '') body[field] = Number(input.value); }
    else if (type === 'item') { if (input.value !== '') body[field] = input.value; else if (input.dataset.nullable === 'true') body[field] = null; }
    else body[field] = input.value;
  }
  return body;
}

async function perform(name, body) {
  const action = encodeURIComponent(name);
  return send(words(name), 'POST', `/feeds/${encodeURIComponent(app.feed)}/actions/${action}`, body);
}

document.addEventListener('submit', async (event) => {
  const form = event.target.closest('form[data-action]');
  if (!form) return;
  event.preventDefault();
  const li = form.closest('li[data-item-id]');
  const button = form.querySelector('.action-button');
  button.disabled = true;
  const ok = await perform(form.dataset.action, actionBody(form, li));
  button.disabled = false;
  if (ok) for (const input of form.querySelectorAll('input[type="text"]')) input.value = '';
});

feedEl.addEventListener('click', (event) => {
  const li = event.target.closest('li[data-item-id]');
  if (!li || event.target.closest('form, input, select, textarea')) return;
  const primary = primaryAction(itemActions(li.dataset.kind));
  if (primary) perform(primary.name, { [targetField(primary).name]: li.dataset.itemId });
});

// ---- Controls, and start ------------------------------------------------------------------------

const token = $('token');
token.value = localStorage.getItem('diffstream-token') || '';
function saveToken(changed) {
  const value = token.value.trim();
  if (value) localStorage.setItem('diffstream-token', value);
  else localStorage.removeItem('diffstream-token');
  setHidden($('token-set'), !value);
  if (value || changed === true) diffstreamStreams.setToken(value); // the event stream carries it as a cookie
}
token.addEventListener('input', () => saveToken(true));
token.addEventListener('change', () => diffstreamStreams.retry());
$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  saveToken();
  diffstreamStreams.retry();
  event.target.closest('details').open = false;
});
saveToken();

const picker = $('feed-picker');
function addFeedOption(name) {
  if (![...picker.options].some((o) => o.value === name)) picker.append(new Option(name, name));
}

/// Learns the feeds and their actions from the server, and lists them in the picker.
async function loadCatalog() {
  try {
    const response = await fetch('/feeds', { cache: 'no-store' });
    if (!response.ok) return;
    app.catalog = new Map((await response.json()).map((entry) => [entry.feed, entry]));
    for (const name of app.catalog.keys()) addFeedOption(name);
  } catch (_) { /* the server is away: the stream's retries will say so */ }
}

async function switchFeed(feed) {
  await loadCatalog();
  feed = feed || app.catalog.keys().next().value;
  if (!feed) { showNotice('The server has no feeds yet. Create one with PUT /feeds/{name}.'); return; }
  Object.assign(app, { feed, resyncing: false });
  addFeedOption(feed);
  picker.value = feed;
  const url = new URL(location.href);
  url.searchParams.set('feed', feed);
  history.replaceState(null, '', url);
  document.title = `${feed} · DiffStream`;
  feedEl.dataset.feed = feed;
  feedEl.setAttribute('aria-label', `Feed ${feed}`);
  feedEl.setAttribute('aria-busy', 'true');
  feedEl.replaceChildren();
  sections.clear();
  items.clear();
  renderActionBar();
  showNotice(null);
  showError(null);
  setVersion(null);
  setState('connecting');
  connect();
}

picker.addEventListener('change', () => switchFeed(picker.value));

switchFeed(app.feed);
