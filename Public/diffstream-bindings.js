// DiffStream: the bindings of a template (docs/client-js.md): `data-text`, `data-show`, `data-class-*`
// and `data-attr-*` set an element from a model. What a model may set is checked here: no event
// handlers, no attribute the library itself reads, and only http(s) and relative URLs.
//
// A text control the user is typing in keeps what is typed: an update waits (`dsLatest`) until the
// control loses the focus, and `dsValue` is what the model last set.
import { warnOnce } from './diffstream-util.js';

/// Whether `value` is a plain object (not null, not an array).
export const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

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
export function boundElements(root) {
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
export function bind(node, model, context, force = false) {
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
    // (applyLatest, from the connection's focusout listener), since the item's record has moved past it.
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

/// A text control that the focus left, whose updates were held back while it was typed in: it gets
/// the model's latest value (which has moved past what was typed). A control still focused (the
/// window, not the control, lost the focus) keeps what is typed.
export function applyLatest(node) {
  if (!node || node.dsLatest === undefined || node === node.ownerDocument.activeElement) return;
  const text = node.dsLatest;
  node.dsLatest = undefined;
  if (node.value !== text) node.value = text;
  node.dsValue = text;
}

/// What the user typed in `input` is what the model holds now (its action was accepted): it is no
/// longer a change of the user's that an update must not overwrite.
export function acceptTyped(input) {
  input.dsValue = input.value;
}
