// DiffStream: regions, DOM elements kept equal to a feed (`render`, docs/client-js.md). A region
// builds a section or an item once from its template and then only sets the bindings that changed;
// elements are kept by id and put in order with few moves (diffstream-keyed.js), animated by
// diffstream-animate.js; an item of a kind without a template is shown as readable JSON with generic
// action controls (diffstream-actions.js). The feeds' state comes from the connection.
import { isObject, bind, boundElements } from './diffstream-bindings.js';
import { reorder } from './diffstream-keyed.js';
import { animationWanted, measure, fadeOut, playFlip } from './diffstream-animate.js';
import { targetField, actionForm } from './diffstream-actions.js';

// ---- Templates ------------------------------------------------------------------------------------

const css = (value) => (globalThis.CSS && CSS.escape ? CSS.escape(value) : String(value).replace(/["\\]/g, '\\$&'));

/// The template for items of `kind` in `feed`: one naming the feed first, then one for every feed.
/// `data-kind` may list several kinds (`data-kind="image video"`): they share the item's elements.
function findTemplate(root, selector, feed) {
  return root.querySelector(`template${selector}[data-feed="${css(feed)}"]`)
    || root.querySelector(`template${selector}:not([data-feed])`);
}

/// The text a generic item is titled with: the model's `title`, `name` or `text`, if one is a string.
const genericTitle = (model) => {
  if (!isObject(model)) return '';
  const found = ['title', 'name', 'text'].map((key) => model[key]).find((value) => typeof value === 'string' && value !== '');
  return found ?? '';
};

// ---- Regions: a DOM element kept equal to a feed --------------------------------------------------

/// One `render(container, feed)`: sections as `<section data-section-id>` (the header from a
/// section template, then a list), items as `<li data-item-id data-kind>` filled from their kind's template.
export class Region {
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
    return animationWanted(this.options.animate, this.sections.size + this.items.size);
  }

  /// Makes the region show `sections` (the feed's sections; [] for a deleted feed).
  show(sections) {
    if (this.closed) return;
    const animate = this.animated && this.container.isConnected;
    const rects = animate ? measure([...this.sections.values(), ...this.items.values()].map((record) => record.element)) : null;
    const inserted = new Set();
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
