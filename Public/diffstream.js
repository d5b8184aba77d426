// DiffStream's client library for the browser (docs/client-js.md): follow feeds over one shared
// connection, and keep DOM regions equal to them with templates written in plain HTML.
//
//   import { connect, subscribe, render } from '/diffstream.js';
//   connect();                                   // optional: the first subscribe or render connects
//   render(document.querySelector('#scores'), 'scores');
//
// The transport (one multi-feed event stream, shared by the tabs of an origin) is diffstream-streams.js,
// and the protocol state machine (apply a snapshot or a batch, detect a gap) is diffstream-protocol.js;
// both are documented in docs/client-js-protocol.md. This module only uses their documented API.

import { FeedState } from './diffstream-protocol.js';
import { openStreams } from './diffstream-streams.js';
import { warnOnce, words } from './diffstream-util.js';

// ---- Small helpers ----------------------------------------------------------------------------------

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
const MAX_ANIMATED = 600; // with more sections and items than this in a region, changes are not animated

/// The value at a dotted path of a model (`stats.score`); `$id`, `$kind` and `$section` name the
/// item's id, its kind and its section's id; an empty path or `.` is the model itself.
export function valueAt(model, path, context = {}) {
  if (path === '' || path === '.' || path === undefined) return model;
  if (path === '$id') return context.id;
  if (path === '$kind') return context.kind;
  if (path === '$section') return context.section;
  let value = model;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

const truthy = (value) => Boolean(value) && !(Array.isArray(value) && value.length === 0);
/// The text a generic item is titled with: the model's `title`, `name` or `text`, if one is a string.
const genericTitle = (model) => {
  if (!isObject(model)) return '';
  const found = ['title', 'name', 'text'].map((key) => model[key]).find((value) => typeof value === 'string' && value !== '');
  return found ?? '';
};
const asText = (value) => (value === undefined || value === null ? '' : isObject(value) || Array.isArray(value) ? JSON.stringify(value) : String(value));

/// Attributes whose value is a URL: only http(s) and relative URLs are set (no `javascript:`, `data:`).
const URL_ATTRIBUTES = new Set(['href', 'src', 'action', 'formaction', 'poster', 'cite', 'background', 'longdesc',
  'ping', 'srcset', 'xlink:href', 'data', 'codebase', 'manifest', 'icon', 'usemap', 'lowsrc', 'dynsrc', 'imagesrcset']);
/// Attributes never set from a model: event handlers (`on*`), HTML in an attribute, the template
/// machinery, and every `data-*` attribute this library reads (a model that set `data-feed` or
/// `data-item-id` on a control would choose where its action is posted).
const REFUSED_ATTRIBUTE = /^(on|srcdoc$|is$|data-(text|show|action|attr-|class-)|data-(feed|kind|section|section-id|item-id|item-field|item-class|error|keep|stale)$)/i;

/// Whether a string is an http(s) or relative URL (WHATWG URL: ASCII tabs and newlines are removed and
/// leading C0 controls and spaces are stripped before the scheme is read, so they are here too).
export function isSafeURL(value) {
  const url = String(value).replace(/[\t\n\r]/g, '').replace(/^[\u0000-\u0020]+/, '');
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url);
  return !scheme || /^https?$/i.test(scheme[1]);
}

const safeURLValue = (name, value) => (name.endsWith('srcset')
  ? value.split(',').every((candidate) => isSafeURL(candidate.trim().split(/\s+/)[0] || ''))
  : isSafeURL(value));

const BINDING = /^data-(text|show|attr-.+|class-.+)$/;
const hasBinding = (node) => [...node.attributes].some((a) => BINDING.test(a.name));

/// The elements of a fragment (or element) that carry bindings.
function boundElements(root) {
  const found = [];
  if (root.nodeType === Node.ELEMENT_NODE && hasBinding(root)) found.push(root);
  for (const node of root.querySelectorAll('*')) if (hasBinding(node)) found.push(node);
  return found;
}

/// A text control that the user has changed since the model last set it, while it has the focus:
/// an update does not overwrite it.
const TEXT_INPUT = /^(text|search|url|tel|email|password|number|date|datetime-local|month|time|week|color|range)$/;
const isTextControl = (node) => node.tagName === 'TEXTAREA' || (node.tagName === 'INPUT' && TEXT_INPUT.test(node.type));
const beingTyped = (node) => node === node.ownerDocument.activeElement && isTextControl(node) && node.value !== (node.dsValue ?? node.value + '\u0000');

/// Sets one element's bindings from a model. `force` also overwrites a control being typed in (a failed action).
function bind(node, model, context, force = false) {
  for (const { name, value: path } of [...node.attributes]) {
    if (name === 'data-text') {
      const text = asText(valueAt(model, path, context));
      if (node.textContent !== text) node.textContent = text;
    } else if (name === 'data-show') {
      const hidden = !truthy(valueAt(model, path, context));
      if (node.hidden !== hidden) node.hidden = hidden;
    } else if (name.startsWith('data-class-')) {
      const className = name.slice('data-class-'.length);
      const on = truthy(valueAt(model, path, context));
      if (node.classList.contains(className) !== on) node.classList.toggle(className, on);
    } else if (name.startsWith('data-attr-')) {
      setAttribute(node, name.slice('data-attr-'.length), valueAt(model, path, context), force);
    }
  }
}

function setAttribute(node, name, value, force) {
  if (REFUSED_ATTRIBUTE.test(name)) { warnOnce(`the attribute ${name} is never bound (data-attr-${name})`); return; }
  if (name === 'checked' || name === 'selected') {
    const on = truthy(value);
    if (node[name] !== on) node[name] = on;
    return;
  }
  if (name === 'value') {
    const text = asText(value);
    // The user's typing wins until the control loses the focus; then the model's latest value is set
    // (Connection's focusout listener), since the item's record has moved past it.
    if (!force && beingTyped(node)) { node.dsLatest = text; return; }
    if (node.value !== text) node.value = text;
    node.dsValue = text;
    node.dsLatest = undefined;
    return;
  }
  if (value === undefined || value === null || value === false) {
    if (node.hasAttribute(name)) node.removeAttribute(name);
    return;
  }
  const text = value === true ? '' : asText(value);
  if (URL_ATTRIBUTES.has(name.toLowerCase()) && !safeURLValue(name.toLowerCase(), text)) {
    warnOnce(`refused the URL ${JSON.stringify(text.slice(0, 60))} for ${name}: only http(s) and relative URLs`);
    if (node.hasAttribute(name)) node.removeAttribute(name);
    return;
  }
  if (node.getAttribute(name) !== text) node.setAttribute(name, text);
}

// ---- Templates ------------------------------------------------------------------------------------

const css = (value) => (globalThis.CSS && CSS.escape ? CSS.escape(value) : String(value).replace(/["\\]/g, '\\$&'));

/// The template for items of `kind` in `feed`: one naming the feed first, then one for every feed.
/// `data-kind` may list several kinds (`data-kind="image video"`): they share the item's elements.
function findTemplate(root, selector, feed) {
  return root.querySelector(`template${selector}[data-feed="${css(feed)}"]`)
    || root.querySelector(`template${selector}:not([data-feed])`);
}

// ---- Keyed order: few moves -----------------------------------------------------------------------

/// Indices (into `sequence`) of a longest increasing subsequence of its non-negative values.
/// - Complexity: O(n log n).
function longestIncreasing(sequence) {
  const tails = [];      // tails[k]: index of the smallest tail of an increasing run of length k + 1
  const previous = new Array(sequence.length);
  for (let i = 0; i < sequence.length; i++) {
    const value = sequence[i];
    if (value < 0) continue;
    let lo = 0; let hi = tails.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (sequence[tails[mid]] < value) lo = mid + 1; else hi = mid; }
    previous[i] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = i;
  }
  const kept = new Set();
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = previous[i]) kept.add(i);
  return kept;
}

/// Puts `nodes` into `parent` in this order, moving as few as possible (only the ones outside a longest
/// run already in order), so focus, selection and animations of the others are untouched. A moved last
/// node goes to the end of `parent`.
/// - Complexity: O(n log n) for n nodes.
function reorder(parent, nodes) {
  const position = new Map();
  let index = 0;
  for (const child of parent.children) position.set(child, index++);
  const kept = longestIncreasing(nodes.map((node) => (position.has(node) ? position.get(node) : -1)));
  let next = null;
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i];
    if (!kept.has(i) && (node.parentNode !== parent || node.nextSibling !== next)) parent.insertBefore(node, next);
    next = node;
  }
}

// ---- Animation: FLIP moves, fading inserts and removals -------------------------------------------

const reducedMotion = globalThis.matchMedia ? matchMedia('(prefers-reduced-motion: reduce)') : { matches: true };

function fadeOut(node) {
  const rect = node.getBoundingClientRect();
  if (!rect.width && !rect.height) return;
  const copy = node.cloneNode(true);
  for (const n of [copy, ...copy.querySelectorAll('[data-item-id], [data-section-id], [id], [name]')]) {
    n.removeAttribute('data-item-id'); n.removeAttribute('data-section-id'); n.removeAttribute('id'); n.removeAttribute('name');
  }
  copy.classList.add('ds-ghost');
  copy.setAttribute('aria-hidden', 'true');
  copy.inert = true;
  Object.assign(copy.style, {
    position: 'absolute', zIndex: '5', margin: '0', pointerEvents: 'none', boxSizing: 'border-box',
    left: `${rect.left + scrollX}px`, top: `${rect.top + scrollY}px`, width: `${rect.width}px`, height: `${rect.height}px`,
  });
  document.body.append(copy);
  const fade = copy.animate([{ opacity: 1 }, { opacity: 0, transform: 'scale(.92)' }], { duration: 260, easing: 'ease-in' });
  fade.onfinish = fade.oncancel = () => copy.remove();
}

function playFlip(rects, inserted) {
  const moved = [...rects].filter(([node]) => node.isConnected && !inserted.has(node));
  for (const [node] of moved) for (const a of node.getAnimations()) if (a.id === 'ds-flip') a.cancel();
  // Sections first: an item in a moving section is animated only by how far it moves within it.
  moved.sort(([a], [b]) => (b.dataset.sectionId !== undefined) - (a.dataset.sectionId !== undefined));
  const now = new Map(moved.map(([node]) => [node, node.getBoundingClientRect()]));
  const deltas = new Map();
  for (const [node, old] of moved) {
    const outer = node.dataset.itemId !== undefined && deltas.get(node.closest('[data-section-id]'));
    const dx = old.left - now.get(node).left - (outer ? outer[0] : 0);
    const dy = old.top - now.get(node).top - (outer ? outer[1] : 0);
    if (Math.abs(dx) < 0.5 && Math.abs(dy) < 0.5) continue;
    deltas.set(node, [dx, dy]);
    node.animate([{ transform: `translate(${dx}px, ${dy}px)` }, { transform: 'none' }],
      { id: 'ds-flip', duration: 320, easing: 'cubic-bezier(.2, .8, .2, 1)' });
  }
  for (const node of inserted) {
    if (!node.isConnected) continue;
    const scale = node.dataset.itemId !== undefined ? 'scale(.94)' : 'none';
    node.animate([{ opacity: 0, transform: scale }, { opacity: 1, transform: 'none' }], { duration: 260, easing: 'ease-out' });
  }
}

// ---- Regions: a DOM element kept equal to a feed --------------------------------------------------

/// One `render(container, feed)`: sections as `<section data-section-id>` (the header from a
/// section template, then a list), items as `<li data-item-id data-kind>` filled from their kind's template.
class Region {
  constructor(connection, container, feed, options) {
    this.connection = connection;
    this.container = container;
    this.feed = feed;
    this.options = options;
    this.root = options.templates || document;
    this.sections = new Map(); // id -> { element, list, bound, json }
    this.items = new Map();    // id -> { element, kind, template, bound, json }
    this.closed = false;
    container.dataset.feed = feed;
    container.setAttribute('aria-busy', 'true');
    container.diffstreamRegion = this;
  }

  get animated() {
    const option = this.options.animate;
    const wanted = typeof option === 'function' ? option() : option !== false;
    return wanted && !reducedMotion.matches && typeof Element.prototype.animate === 'function'
      && this.sections.size + this.items.size <= MAX_ANIMATED;
  }

  /// Makes the region show `sections` (the feed's sections; [] for a deleted feed).
  show(sections) {
    if (this.closed) return;
    const animate = this.animated && this.container.isConnected;
    const rects = new Map();
    const inserted = new Set();
    if (animate) {
      for (const { element } of this.sections.values()) rects.set(element, element.getBoundingClientRect());
      for (const { element } of this.items.values()) rects.set(element, element.getBoundingClientRect());
    }
    const focus = this.saveFocus();
    const sectionIds = new Set(sections.map((s) => s.id));
    const itemIds = new Set();
    for (const section of sections) for (const item of section.items || []) itemIds.add(item.id);
    for (const [id, record] of this.items) {
      if (itemIds.has(id)) continue;
      if (animate) fadeOut(record.element);
      record.element.remove();
      this.items.delete(id);
    }
    for (const [id, record] of this.sections) {
      if (sectionIds.has(id)) continue;
      if (animate) fadeOut(record.element);
      record.element.remove();
      this.sections.delete(id);
    }
    const sectionElements = sections.map((section) => {
      let record = this.sections.get(section.id);
      if (!record) {
        record = this.makeSection(section);
        inserted.add(record.element);
      } else {
        this.fillSection(record, section);
      }
      reorder(record.list, (section.items || []).map((item) => {
        let itemRecord = this.items.get(item.id);
        if (!itemRecord) {
          itemRecord = this.makeItem(item, section.id);
          inserted.add(itemRecord.element);
        } else {
          this.fillItem(itemRecord, item, section.id);
        }
        return itemRecord.element;
      }));
      return record.element;
    });
    reorder(this.container, sectionElements);
    this.restoreFocus(focus);
    if (animate) playFlip(rects, inserted);
    this.container.setAttribute('aria-busy', 'false');
  }

  // Sections

  makeSection(section) {
    const element = document.createElement(this.options.sectionTag || 'section');
    element.className = 'ds-section';
    element.dataset.sectionId = section.id;
    const list = document.createElement(this.options.listTag || 'ul');
    list.className = 'ds-items';
    const template = findTemplate(this.root, `[data-section="${css(section.id)}"]`, this.feed)
      || findTemplate(this.root, '[data-section=""]', this.feed);
    let bound;
    if (template) {
      const content = template.content.cloneNode(true);
      bound = boundElements(content);
      element.append(content);
    } else {
      const h2 = document.createElement('h2');
      h2.className = 'ds-section-title';
      element.append(h2);
      bound = [];
    }
    element.append(list);
    const record = { element, list, bound, template: Boolean(template), json: null };
    this.fillSection(record, section, false, true);
    this.sections.set(section.id, record);
    return record;
  }

  /// Sets a section's header from its model (only when the model changed, unless `force`), then calls
  /// the `sectionHook` with the same context as item hooks: `{created, feed, section, region}`.
  fillSection(record, section, force = false, created = false) {
    const json = JSON.stringify(section.model ?? null);
    if (record.json === json && !force) return;
    record.json = json;
    const model = section.model ?? null;
    const context = { id: section.id, section: section.id, kind: null };
    if (!record.template) {
      const h2 = record.element.firstElementChild;
      const title = isObject(model) && typeof model.title === 'string' ? model.title : '';
      h2.classList.toggle('ds-untitled', !title);
      if (h2.textContent !== (title || section.id)) h2.textContent = title || section.id;
    }
    for (const node of record.bound) bind(node, model, context, force);
    const hook = this.options.sectionHook;
    if (hook) hook(record.element, section, { created, feed: this.feed, section: section.id, region: this });
  }

  // Items

  templateFor(kind) {
    return findTemplate(this.root, `[data-kind~="${css(kind)}"]`, this.feed);
  }

  makeItem(item, sectionId) {
    const element = document.createElement(this.options.itemTag || 'li');
    element.dataset.itemId = item.id;
    const record = { element, kind: null, template: undefined, bound: [], json: null, created: false };
    this.fillItem(record, item, sectionId);
    this.items.set(item.id, record);
    return record;
  }

  /// Fills an item in place. Its elements are made once per template: a change of model only sets the
  /// bindings that differ; a change of kind to one of another template builds its parts anew.
  fillItem(record, item, sectionId, force = false) {
    const model = item.model === undefined ? null : item.model;
    const json = JSON.stringify([item.kind, model]);
    if (record.json === json && !force) return;
    record.json = json;
    const { element } = record;
    const template = this.templateFor(item.kind) || null;
    const hook = this.options.hooks && Object.hasOwn(this.options.hooks, item.kind) ? this.options.hooks[item.kind] : null;
    let created = false;
    if (record.template !== template || (!template && !hook) !== record.generic) {
      created = true;
      record.template = template;
      record.generic = !template && !hook;
      element.replaceChildren();
      element.className = 'ds-item';
      if (template) {
        for (const name of (template.dataset.itemClass || '').split(/\s+/)) if (name) element.classList.add(name);
        const content = template.content.cloneNode(true);
        record.bound = boundElements(content);
        element.append(content);
      } else if (record.generic) {
        element.classList.add('ds-json');
        record.bound = [];
        this.buildGeneric(element);
      } else {
        record.bound = [];
      }
    }
    if (element.dataset.kind !== item.kind) element.dataset.kind = item.kind;
    record.kind = item.kind;
    const context = { id: item.id, kind: item.kind, section: sectionId };
    if (record.generic) this.fillGeneric(element, item);
    for (const node of record.bound) bind(node, model, context, force);
    if (hook) hook(element, item, { created, feed: this.feed, section: sectionId, region: this });
  }

  // The readable JSON view of an item of a kind without a template, with generic action controls.

  /// An item of a kind the page has no template for: its kind, a title from the model's `title`, `name`
  /// or `text` when it has one, and the model as indented JSON. Block elements (and a space between the
  /// kind and the title), so it reads as separate lines on a page with no style sheet of ours.
  buildGeneric(element) {
    const label = document.createElement('small'); label.className = 'ds-kind';
    const title = document.createElement('div'); title.className = 'ds-title';
    const pre = document.createElement('pre'); pre.className = 'json';
    element.append(label, ' ', title, pre);
    this.connection.catalog().then(() => {
      if (element.isConnected || this.items.get(element.dataset.itemId)?.element === element) this.addGenericActions(element);
    });
  }

  fillGeneric(element, item) {
    const [label, title, pre] = element.children;
    const model = item.model ?? null;
    label.textContent = item.kind;
    title.textContent = genericTitle(model);
    const json = JSON.stringify(model, null, 2);
    if (pre.textContent !== json) pre.textContent = json;
  }

  addGenericActions(element) {
    if (element.querySelector(':scope > .ds-actions')) return;
    const kind = element.dataset.kind;
    const actions = this.connection.actionsOf(this.feed).filter((a) => { const t = targetField(a); return t && t.itemKind === kind; });
    if (!actions.length) return;
    const box = document.createElement('div');
    box.className = 'ds-actions';
    for (const action of actions) box.append(actionForm(action, targetField(action), (id) => this.itemTitles(id)));
    element.append(box);
  }

  /// Items of a kind, for the generic controls' item lists: [id, label].
  itemTitles(kind) {
    return [...this.items.values()].filter((r) => r.kind === kind).map((r) => {
      let label = r.element.dataset.itemId;
      try { const [, model] = JSON.parse(r.json); label = genericTitle(model) || label; } catch (_) { /* keep the id */ }
      return [r.element.dataset.itemId, label];
    });
  }

  /// A control whose action failed: its item (or section) is set from the feed again, typing included.
  revert(control) {
    const itemElement = control.closest('[data-item-id]');
    const state = this.connection.feeds.get(this.feed)?.state;
    if (!state || !state.sections) return;
    for (const section of state.sections) {
      if (!itemElement && control.closest('[data-section-id]')?.dataset.sectionId === section.id) {
        const record = this.sections.get(section.id);
        if (record) this.fillSection(record, section, true);
      }
      for (const item of section.items || []) {
        const record = itemElement && this.items.get(item.id);
        if (record && record.element === itemElement) this.fillItem(record, item, section.id, true);
      }
    }
  }

  // Focus: moving an element blurs it, so the focused element and its selection are put back.

  saveFocus() {
    const node = document.activeElement;
    if (!node || node === this.container || !this.container.contains(node)) return null;
    let selection = null;
    try { if (typeof node.selectionStart === 'number') selection = [node.selectionStart, node.selectionEnd, node.selectionDirection]; } catch (_) { /* not a text control */ }
    return { node, selection };
  }

  restoreFocus(saved) {
    if (!saved || !saved.node.isConnected || document.activeElement === saved.node) return;
    saved.node.focus({ preventScroll: true });
    if (saved.selection) try { saved.node.setSelectionRange(...saved.selection); } catch (_) { /* not a text control */ }
  }

  /// `data-stale` on the container while the feed is unavailable (its value: the server's detail), so a
  /// page can mark the last state shown as possibly out of date (`[data-stale] { … }`).
  markStale(stale) {
    if (this.closed) return;
    if (stale) { if (this.container.dataset.stale !== stale.detail) this.container.dataset.stale = stale.detail || ''; }
    else if (this.container.hasAttribute('data-stale')) this.container.removeAttribute('data-stale');
  }

  close() {
    this.closed = true;
    if (this.container.hasAttribute('data-stale')) this.container.removeAttribute('data-stale');
    if (this.container.diffstreamRegion === this) delete this.container.diffstreamRegion;
  }
}

// ---- Actions ---------------------------------------------------------------------------------------

/// The field of an action that takes the id of an item (of `kind`, when given): the first required one.
function targetField(action, kind) {
  return (action.fields || []).find((f) => f.type === 'item' && !f.optional && !f.nullable && (kind === undefined || f.itemKind === kind));
}

/// A generic form for an action the server declares: an input per field (a list of items for item
/// fields) and a submit button. `target` is the field that gets the form's item id.
function actionForm(action, target, itemsOf) {
  const form = document.createElement('form');
  form.className = 'ds-action';
  form.dataset.action = action.name;
  if (target) form.dataset.itemField = target.name;
  for (const field of action.fields || []) {
    if (field === target || (field.optional && field.type === 'item')) continue;
    let input;
    if (field.type === 'item') {
      input = document.createElement('select');
      input.className = 'ds-action-input';
      if (field.nullable || field.optional) input.append(new Option('at the end', ''));
      for (const [id, label] of itemsOf(field.itemKind)) input.append(new Option(`before ${label}`, id));
      input.dataset.itemKind = field.itemKind;
    } else {
      input = document.createElement('input');
      input.className = 'ds-action-input';
      input.autocomplete = 'off';
      input.placeholder = words(field.name);
      input.type = field.type === 'boolean' ? 'checkbox' : field.type === 'string' ? 'text' : 'number';
      if (field.type === 'number') input.step = 'any';
    }
    input.name = field.name;
    input.setAttribute('aria-label', words(field.name));
    form.append(input);
  }
  const button = document.createElement('button');
  button.type = 'submit';
  button.className = 'ds-action-button';
  button.textContent = words(action.name);
  form.append(button);
  return form;
}

/// A form's fields as JSON: checkboxes as booleans, number inputs as numbers (left out when empty), an
/// empty `<select>` as null, the rest as strings. Controls without a name are left out.
function formFields(form) {
  const body = {};
  for (const control of form.elements) {
    if (!control.name || control.disabled || control.type === 'submit' || control.type === 'button' || control.type === 'reset') continue;
    if (control.type === 'checkbox') body[control.name] = control.checked;
    else if (control.type === 'radio') { if (control.checked) body[control.name] = control.value; }
    else if (control.type === 'number' || control.type === 'range') { if (control.value !== '') body[control.name] = Number(control.value); }
    else if (control.tagName === 'SELECT') body[control.name] = control.value === '' ? null : control.value;
    else body[control.name] = control.value;
  }
  return body;
}

/// An error of a write: `status` is the HTTP status (0 when the server did not answer).
export class ActionError extends Error {
  constructor(message, status, body) {
    super(message);
    this.name = 'ActionError';
    this.status = status;
    this.body = body;
  }
}

// ---- The connection ---------------------------------------------------------------------------------

/// One shared connection: every subscribed feed on one event stream (see docs/client-js.md).
export class Connection {
  constructor(options = {}) {
    const here = globalThis.location ? location.href : 'http://localhost/';
    const base = new URL(options.baseURL || '/', here);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    this.baseURL = base.href;
    this.explicitBase = Boolean(options.baseURL);
    this.crossOrigin = globalThis.location ? base.origin !== location.origin : false;
    this.token = options.token || null;
    this.mode = options.mode || (this.crossOrigin ? 'own' : undefined);
    this.onError = options.onError || null;
    this.feeds = new Map(); // feed -> { state: FeedState, status, connection, error, listeners: Set, stream }
    this.regions = new Set();
    this.catalogPromise = null;
    this.catalogEntries = new Map();
    this.closed = false;
    this.streams = this.open();
    this.listening = false;
    this.listen();
  }

  open() {
    const options = {};
    if (this.explicitBase) options.baseURL = this.baseURL;
    if (this.token) options.token = this.token;
    if (this.mode) options.mode = this.mode;
    return openStreams(options);
  }

  /// A URL of the server (`feeds/x/actions/y`).
  url(path) { return new URL(path.replace(/^\//, ''), this.baseURL).href; }

  headers(json) {
    const headers = json ? { 'Content-Type': 'application/json' } : {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    return headers;
  }

  /// Uses another token from now on: writes send it as `Authorization: Bearer`, and the streams are
  /// opened again with it (every feed resubscribes; a snapshot of each follows). `null` removes it.
  setToken(token) {
    const value = token || null;
    if (value === this.token) return;
    this.token = value;
    this.catalogPromise = null;
    if (typeof this.streams.setToken === 'function') { // the transport keeps the stream and asks refused feeds again
      this.streams.setToken(value || '');
      return;
    }
    this.streams.close();
    this.streams = this.open();
    for (const entry of this.feeds.values()) {
      entry.state = new FeedState(entry.feed);
      entry.status = 'connecting';
      entry.error = null;
      entry.stream = this.streams.subscribe(entry.feed, (event) => this.receive(entry, event));
    }
  }

  /// Asks again now for the feeds the server refused (say, after the user signed in some other way).
  retry() { if (typeof this.streams.retry === 'function') this.streams.retry(); }

  // Feeds

  entry(feed) {
    let entry = this.feeds.get(feed);
    if (!entry) {
      entry = { feed, state: new FeedState(feed), status: 'connecting', connection: 'connecting', error: null, listeners: new Set(), stream: null };
      this.feeds.set(feed, entry);
      entry.stream = this.streams.subscribe(feed, (event) => this.receive(entry, event));
    }
    return entry;
  }

  release(entry, listener) {
    entry.listeners.delete(listener);
    if (entry.listeners.size || this.feeds.get(entry.feed) !== entry) return;
    this.feeds.delete(entry.feed);
    entry.stream.close();
  }

  /// One event of the transport for a feed: applied with the protocol's state machine, then passed on.
  receive(entry, event) {
    if (this.feeds.get(entry.feed) !== entry) return;
    let change;
    switch (event.type) {
      case 'snapshot':
      case 'batch': {
        let outcome;
        try {
          outcome = entry.state.apply(event.type, event.data, event.id);
        } catch (error) {
          outcome = { result: 'resync', reason: error.message };
        }
        if (outcome.result === 'duplicate') return;
        if (outcome.result === 'resync') {
          entry.status = 'resyncing';
          entry.stream.resync();
          change = { type: 'resync', reason: outcome.reason };
          break;
        }
        entry.error = null;
        const resynced = entry.status === 'resyncing' || entry.status === 'reconnecting';
        entry.status = 'live';
        change = outcome.result === 'snapshot'
          ? { type: 'snapshot', data: event.data, resynced }
          : { type: 'batch', ops: outcome.ops || event.data.ops, data: event.data };
        break;
      }
      case 'unavailable':
      case 'available': {
        // The server cannot reach its store (Redis), then can again: what is shown stays, marked stale.
        const outcome = entry.state.apply(event.type, event.data);
        if (outcome.result === 'duplicate') return;
        change = outcome.result === 'unavailable' ? { type: 'unavailable', detail: outcome.detail, data: event.data } : { type: 'available', data: event.data };
        break;
      }
      case 'deleted':
      case 'notfound':
      case 'forbidden':
      case 'unauthorized':
        entry.state.stale = null; // the feed's part of the stream ended; that event says more
        entry.status = event.type === 'unauthorized' && event.data && /expired/i.test(event.data.error || '') ? 'expired' : event.type;
        entry.error = event.data || null;
        if (event.type === 'deleted') {
          // The transport ended this subscription: the entry is dropped, so a later subscribe or render of
          // the name subscribes afresh (and gets the feed once it is created again).
          entry.state = new FeedState(entry.feed);
          this.feeds.delete(entry.feed);
        }
        change = { type: event.type, data: event.data };
        break;
      case 'state':
        // The transport's states: connecting, open, retrying, closed (docs/client-js-protocol.md).
        entry.connection = event.state;
        // Closed with a status: the request was refused as invalid (an invalid feed name, which never
        // reaches the stream; or another 4xx answer to the stream that the transport cannot fix).
        if (event.state === 'closed' && event.status !== undefined) {
          entry.status = 'invalid';
          entry.error = { feed: entry.feed, status: event.status, detail: event.detail || '' };
        } else if (event.state === 'retrying' && entry.status === 'live') entry.status = 'reconnecting';
        else if (event.state === 'open' && (entry.status === 'reconnecting' || entry.status === 'invalid') && entry.state.version !== null && entry.state.version !== undefined) {
          entry.status = 'live';
          entry.error = null;
        }
        change = { type: 'state', state: event.state };
        if (event.status !== undefined) Object.assign(change, { status: event.status, detail: event.detail || '' });
        break;
      default:
        return;
    }
    for (const listener of [...entry.listeners]) {
      try { listener(change, entry); } catch (error) { console.error(error); }
    }
  }

  /// Follows one feed; see `subscribe` below.
  subscribe(feed, handlers = {}) {
    if (this.closed) throw new Error('diffstream: the connection is closed');
    const entry = this.entry(feed);
    const h = typeof handlers === 'function' ? { change: handlers } : handlers;
    let open = true;
    const subscription = {
      feed,
      get version() { return entry.state.version ?? null; },
      get history() { return entry.state.history ?? null; },
      get sections() { return entry.state.sections ?? null; },
      get lastEventId() { return entry.state.lastEventId ?? null; },
      get status() { return entry.status; },
      get connection() { return entry.connection; },
      get error() { return entry.error; },
      /// `{detail}` while the server says the feed is unavailable (its store, Redis, is out of reach):
      /// `sections` is then the last state received, kept but maybe out of date. Null otherwise.
      get stale() { return entry.state.stale ?? null; },
      get state() {
        return { feed, version: this.version, history: this.history, status: entry.status, connection: entry.connection, error: entry.error, stale: this.stale, sections: this.sections };
      },
      resync: () => { if (open) { entry.status = 'resyncing'; entry.stream.resync(); } },
      close: () => { if (open) { open = false; this.release(entry, listener); } },
    };
    const listener = (change) => {
      if (!open) return;
      if (h.change) h.change(change, subscription);
      if (change.type === 'snapshot' && h.snapshot) h.snapshot(subscription, change.data);
      else if (change.type === 'batch' && h.batch) h.batch(subscription, change.ops, change.data);
      else if (change.type === 'state' && h.state) h.state(subscription, change.state);
      else if (change.type === 'deleted' && h.deleted) h.deleted(subscription);
      else if (change.type === 'unavailable' && h.unavailable) h.unavailable(subscription, change.detail);
      else if (change.type === 'available' && h.available) h.available(subscription);
      else if (['notfound', 'forbidden', 'unauthorized'].includes(change.type) && h.refused) h.refused(subscription, change.type, change.data);
    };
    entry.listeners.add(listener);
    // A feed already live: the new subscriber starts from what is known.
    if (entry.state.sections && entry.state.version !== null && entry.state.version !== undefined) {
      queueMicrotask(() => listener({ type: 'snapshot', data: { feed, history: entry.state.history, version: entry.state.version, sections: entry.state.sections }, resynced: false }));
    }
    // A feed unavailable already: the new subscriber is told too (after that snapshot).
    if (entry.state.stale) {
      queueMicrotask(() => { if (entry.state.stale) listener({ type: 'unavailable', detail: entry.state.stale.detail, data: { feed, detail: entry.state.stale.detail } }); });
    }
    return subscription;
  }

  /// Keeps `container` equal to the feed; see `render` below.
  render(container, feed, options = {}) {
    if (container.diffstreamRegion) container.diffstreamRegion.handle.close();
    const region = new Region(this, container, feed, options);
    this.regions.add(region);
    const show = () => region.show(region.subscription.sections || []);
    region.subscription = this.subscribe(feed, (change, subscription) => {
      if (change.type === 'snapshot' || change.type === 'batch') show();
      else if (change.type === 'deleted') region.show([]);
      region.markStale(subscription.stale);
      if (options.onChange) options.onChange(change, subscription);
    });
    if (region.subscription.sections) show();
    region.handle = {
      feed,
      container,
      subscription: region.subscription,
      get state() { return region.subscription.state; },
      close: () => { region.subscription.close(); region.close(); this.regions.delete(region); },
    };
    return region.handle;
  }

  // Writes

  /// Posts an action of a hosted view model: resolves to the server's answer ({feed, version, ops}),
  /// rejects with an ActionError saying why.
  async action(feed, name, input = {}) {
    const url = this.url(`feeds/${encodeURIComponent(feed)}/actions/${encodeURIComponent(name)}`);
    let response;
    try {
      response = await fetch(url, { method: 'POST', headers: this.headers(true), body: JSON.stringify(input), credentials: this.crossOrigin ? 'omit' : 'same-origin' });
    } catch (error) {
      throw new ActionError(`the server did not answer (${error.message})`, 0, null);
    }
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON */ }
    if (response.ok) return body;
    let message = body && body.error ? (body.detail ? `${body.error} — ${body.detail}` : body.error)
      : `the server answered ${response.status} ${response.statusText}`.trim();
    if (response.status === 403) message += ' (your token does not allow this)';
    if (response.status === 401) message += this.token ? ' (check the token)' : ' (set a token)';
    throw new ActionError(message, response.status, body);
  }

  /// GET /feeds, once (again after setToken or refreshCatalog): resolves to the list, each feed with its
  /// kind and actions, or to null when it could not be had (no answer, an error status, not a list). A
  /// failure keeps the actions known from before and is asked again by the next call.
  catalog() {
    if (!this.catalogPromise) {
      const promise = fetch(this.url('feeds'), { headers: this.headers(false), cache: 'no-store', credentials: this.crossOrigin ? 'omit' : 'same-origin' })
        .then((response) => (response.ok ? response.json() : null))
        .then((list) => (Array.isArray(list) ? list : null), () => null)
        .then((list) => {
          if (list) this.catalogEntries = new Map(list.map((entry) => [entry.feed, entry]));
          else if (this.catalogPromise === promise) this.catalogPromise = null;
          return list;
        });
      this.catalogPromise = promise;
    }
    return this.catalogPromise;
  }

  refreshCatalog() { this.catalogPromise = null; return this.catalog(); }

  /// The actions a feed declares (known once `catalog()` has resolved).
  actionsOf(feed) { return (this.catalogEntries.get(feed) || {}).actions || []; }

  /// The field that carries the item's id in action `name` of `feed`: the action's required item field
  /// for this kind, as the server declares it in GET /feeds, or `item`.
  async itemField(feed, name, kind) {
    await this.catalog();
    const action = this.actionsOf(feed).find((a) => a.name === name);
    const field = action && (targetField(action, kind) || targetField(action));
    return field ? field.name : 'item';
  }

  // data-action: clicks, changes and submits anywhere in the document, delegated

  listen() {
    if (this.listening || typeof document === 'undefined') return;
    this.listening = true;
    this.onClick = (event) => {
      const control = event.target.closest && event.target.closest('button[data-action], [role="button"][data-action]');
      if (!control || control.disabled) return;
      event.preventDefault();
      this.run(control, {});
    };
    this.onChange = (event) => {
      const control = event.target;
      if (control.tagName !== 'INPUT' || (control.type !== 'checkbox' && control.type !== 'radio') || !control.dataset.action) return;
      this.run(control, control.name ? { [control.name]: control.type === 'checkbox' ? control.checked : control.value } : {});
    };
    this.onSubmit = (event) => {
      const form = event.target;
      if (form.tagName !== 'FORM' || !form.dataset.action) return;
      event.preventDefault();
      this.run(form, formFields(form));
    };
    // A text control left after updates were held back while it was typed in gets the model's latest
    // value. On the window, so it runs after the page's own focusout listeners (on the document or the
    // elements): a page that saves a field when it is left reads what was typed.
    this.onFocusOut = (event) => {
      const node = event.target;
      // Still the active element: the window lost the focus (another tab or app), not the control.
      if (!node || node.dsLatest === undefined || node === node.ownerDocument.activeElement) return;
      const text = node.dsLatest;
      node.dsLatest = undefined;
      if (node.value !== text) node.value = text;
      node.dsValue = text;
    };
    document.addEventListener('click', this.onClick);
    document.addEventListener('change', this.onChange);
    document.addEventListener('submit', this.onSubmit);
    globalThis.addEventListener('focusout', this.onFocusOut);
  }

  /// Runs the action of a control: the feed is the nearest `data-feed` (a rendered region has it), the
  /// item the nearest `data-item-id`.
  async run(control, fields) {
    const feedElement = control.closest('[data-feed]');
    if (!feedElement) { warnOnce(`data-action="${control.dataset.action}" is not inside an element with data-feed`); return; }
    const feed = feedElement.dataset.feed;
    const region = feedElement.diffstreamRegion && this.regions.has(feedElement.diffstreamRegion) ? feedElement.diffstreamRegion : null;
    const itemElement = control.closest('[data-item-id]');
    const name = control.dataset.action;
    const body = { ...fields };
    if (itemElement && feedElement.contains(itemElement)) {
      const field = control.dataset.itemField || await this.itemField(feed, name, itemElement.dataset.kind);
      body[field] = itemElement.dataset.itemId;
    }
    const busy = control.tagName === 'FORM' ? [...control.querySelectorAll('button:not([type="button"])')] : [control];
    const submitting = control.tagName !== 'INPUT';
    if (submitting) for (const node of busy) node.disabled = true;
    control.setAttribute('aria-busy', 'true');
    try {
      const answer = await this.action(feed, name, body);
      if (control.tagName === 'FORM') {
        // Fields not bound to the model are cleared; bound ones follow the feed.
        for (const input of control.querySelectorAll('input[type="text"], input:not([type]), textarea')) {
          if (!input.hasAttribute('data-attr-value') && input.dataset.keep === undefined) input.value = '';
          else if (input.hasAttribute('data-attr-value')) input.dsValue = input.value;
        }
      }
      control.dispatchEvent(new CustomEvent('diffstream:action', { bubbles: true, detail: { feed, action: name, input: body, answer } }));
    } catch (error) {
      if (region) region.revert(control);
      this.report(error, { feed, action: name, control, region });
    } finally {
      if (submitting) for (const node of busy) node.disabled = false;
      control.removeAttribute('aria-busy');
    }
  }

  /// Shows a failed action: the region's onError, else the connection's, else an element with
  /// `data-error` in the item or region (or next to it, made once); a `diffstream:error` event bubbles too.
  report(error, { feed, action, control, region }) {
    const detail = { feed, action, message: error.message, status: error.status ?? 0, error };
    control.dispatchEvent(new CustomEvent('diffstream:error', { bubbles: true, detail }));
    const handler = (region && region.options.onError) || this.onError;
    if (handler) { handler(detail); return; }
    let box = control.closest('[data-item-id]')?.querySelector('[data-error]')
      || (region && (region.container.querySelector('[data-error]') || region.errorBox));
    if (!box && region) {
      box = document.createElement('p');
      box.className = 'ds-error';
      box.setAttribute('role', 'alert');
      region.container.before(box);
      region.errorBox = box;
    }
    if (!box) { console.warn(`diffstream: could not ${action}: ${error.message}`); return; }
    box.textContent = `Could not ${words(action)}: ${error.message}`;
    box.hidden = false;
  }

  /// Ends every subscription and the streams.
  close() {
    this.closed = true;
    for (const region of [...this.regions]) region.handle.close();
    for (const entry of this.feeds.values()) entry.stream.close();
    this.feeds.clear();
    this.streams.close();
    if (this.listening) {
      document.removeEventListener('click', this.onClick);
      document.removeEventListener('change', this.onChange);
      document.removeEventListener('submit', this.onSubmit);
      globalThis.removeEventListener('focusout', this.onFocusOut);
      this.listening = false;
    }
    if (shared === this) shared = null;
  }
}

// ---- The module's functions: one shared connection per page -----------------------------------------

let shared = null;

/// Starts the page's connection (once; later calls return it). Options: `baseURL` (another server: its
/// own stream, CORS through --allow-origin), `token`, `mode` ('worker' | 'tab' | 'own'), `onError`.
export function connect(options = {}) {
  if (!shared) shared = new Connection(options);
  else if (options.token !== undefined) shared.setToken(options.token);
  return shared;
}

/// Follows one feed: `handlers` is a function (every change) or `{snapshot, batch, state, deleted,
/// refused, unavailable, available, change}`. Returns a subscription with `version`, `history`,
/// `sections`, `status`, `connection`, `stale`, `state`, `resync()` and `close()`.
export function subscribe(feed, handlers) { return connect().subscribe(feed, handlers); }

/// Keeps `container` equal to `feed` with the document's templates. Options: `hooks` ({kind: fn}),
/// `sectionHook`, `templates` (where to look for templates), `animate`, `onError`, `onChange`.
export function render(container, feed, options) { return connect().render(container, feed, options); }

/// Posts an action of a hosted view model (`POST /feeds/{feed}/actions/{name}`).
export function action(feed, name, input) { return connect().action(feed, name, input); }

/// Generic controls for the actions of a feed that do not take an item (for a page's action bar).
export async function renderActions(container, feed) {
  const connection = connect();
  await connection.catalog();
  const forms = connection.actionsOf(feed).filter((a) => !targetField(a)).map((a) => actionForm(a, null, () => []));
  container.dataset.feed = feed;
  container.replaceChildren(...forms);
  container.hidden = forms.length === 0;
  return forms;
}
