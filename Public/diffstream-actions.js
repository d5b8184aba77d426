// DiffStream: actions from the page (docs/client-js.md). Generic forms for the actions a feed declares
// (GET /feeds), and the `data-action` controls of templates and pages: a click, a change or a submit
// anywhere in the document posts the action of the nearest `data-feed`, with the item of the nearest
// `data-item-id`, and a failure is shown where the page asks (onError, a `data-error` element).
import { acceptTyped, applyLatest } from './diffstream-bindings.js';
import { warnOnce, words } from './diffstream-util.js';

/// The field of an action that takes the id of an item (of `kind`, when given): the first required one.
export function targetField(action, kind) {
  return (action.fields || []).find((f) => f.type === 'item' && !f.optional && !f.nullable && (kind === undefined || f.itemKind === kind));
}

/// A generic form for an action the server declares: an input per field (a list of items for item
/// fields) and a submit button. `target` is the field that gets the form's item id.
export function actionForm(action, target, itemsOf) {
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
export function formFields(form) {
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

/// Listens, on the document, for the `data-action` controls of `connection`'s page: clicks on buttons,
/// changes of checkboxes and radio buttons, and submits of forms. Returns a function that stops.
export function listenForActions(connection) {
  const onClick = (event) => {
    const control = event.target.closest && event.target.closest('button[data-action], [role="button"][data-action]');
    if (!control || control.disabled) return;
    event.preventDefault();
    connection.run(control, {});
  };
  const onChange = (event) => {
    const control = event.target;
    if (control.tagName !== 'INPUT' || (control.type !== 'checkbox' && control.type !== 'radio') || !control.dataset.action) return;
    connection.run(control, control.name ? { [control.name]: control.type === 'checkbox' ? control.checked : control.value } : {});
  };
  const onSubmit = (event) => {
    const form = event.target;
    if (form.tagName !== 'FORM' || !form.dataset.action) return;
    event.preventDefault();
    connection.run(form, formFields(form));
  };
  // A text control left after updates were held back while it was typed in gets the model's latest
  // value. On the window, so it runs after the page's own focusout listeners (on the document or the
  // elements): a page that saves a field when it is left reads what was typed.
  const onFocusOut = (event) => applyLatest(event.target);
  document.addEventListener('click', onClick);
  document.addEventListener('change', onChange);
  document.addEventListener('submit', onSubmit);
  globalThis.addEventListener('focusout', onFocusOut);
  return () => {
    document.removeEventListener('click', onClick);
    document.removeEventListener('change', onChange);
    document.removeEventListener('submit', onSubmit);
    globalThis.removeEventListener('focusout', onFocusOut);
  };
}

/// Runs the action of a control with `connection`: the feed is the nearest `data-feed` (a rendered
/// region has it), the item the nearest `data-item-id`. The control is busy meanwhile; on success a
/// `diffstream:action` event bubbles from it, on failure its region is set from the feed again and the
/// error is reported (`reportActionError`).
export async function runAction(connection, control, fields) {
  const feedElement = control.closest('[data-feed]');
  if (!feedElement) { warnOnce(`data-action="${control.dataset.action}" is not inside an element with data-feed`); return; }
  const feed = feedElement.dataset.feed;
  const region = feedElement.diffstreamRegion && connection.regions.has(feedElement.diffstreamRegion) ? feedElement.diffstreamRegion : null;
  const itemElement = control.closest('[data-item-id]');
  const name = control.dataset.action;
  const body = { ...fields };
  if (itemElement && feedElement.contains(itemElement)) {
    const field = control.dataset.itemField || await connection.itemField(feed, name, itemElement.dataset.kind);
    body[field] = itemElement.dataset.itemId;
  }
  const busy = control.tagName === 'FORM' ? [...control.querySelectorAll('button:not([type="button"])')] : [control];
  const submitting = control.tagName !== 'INPUT';
  if (submitting) for (const node of busy) node.disabled = true;
  control.setAttribute('aria-busy', 'true');
  try {
    const answer = await connection.action(feed, name, body);
    if (control.tagName === 'FORM') {
      // Fields not bound to the model are cleared; bound ones follow the feed.
      for (const input of control.querySelectorAll('input[type="text"], input:not([type]), textarea')) {
        if (!input.hasAttribute('data-attr-value') && input.dataset.keep === undefined) input.value = '';
        else if (input.hasAttribute('data-attr-value')) acceptTyped(input);
      }
    }
    control.dispatchEvent(new CustomEvent('diffstream:action', { bubbles: true, detail: { feed, action: name, input: body, answer } }));
  } catch (error) {
    if (region) region.revert(control);
    connection.report(error, { feed, action: name, control, region });
  } finally {
    if (submitting) for (const node of busy) node.disabled = false;
    control.removeAttribute('aria-busy');
  }
}

/// Shows a failed action: the region's onError, else the connection's, else an element with
/// `data-error` in the item or region (or next to it, made once); a `diffstream:error` event bubbles too.
export function reportActionError(connection, error, { feed, action, control, region }) {
  const detail = { feed, action, message: error.message, status: error.status ?? 0, error };
  control.dispatchEvent(new CustomEvent('diffstream:error', { bubbles: true, detail }));
  const handler = (region && region.options.onError) || connection.onError;
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

