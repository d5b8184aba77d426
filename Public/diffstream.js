// DiffStream's client library for the browser (docs/client-js.md): follow feeds over one shared
// connection, and keep DOM regions equal to them with templates written in plain HTML.
//
//   import { connect, subscribe, render } from '/_diffstream/current/diffstream.js';
//   connect();                                   // optional: the first subscribe or render connects
//   render(document.querySelector('#scores'), 'scores');
//
// The transport (one multi-feed event stream, shared by the tabs of an origin) is diffstream-streams.js,
// and the protocol state machine (apply a snapshot or a batch, detect a gap) is diffstream-protocol.js;
// both are documented in docs/client-js-protocol.md. This module only uses their documented API.
//
// This module is the library's face: what a page imports. The parts are modules of their own, one job
// each: diffstream-connection.js (the connection: feeds, subscriptions, writes), diffstream-patch.js
// (regions: templates into the DOM), diffstream-bindings.js (a template's data-* bindings),
// diffstream-keyed.js (keyed order with few moves), diffstream-animate.js (FLIP moves, fades),
// diffstream-actions.js (action forms and data-action controls) and diffstream-util.js.

import { Connection, ActionError } from './diffstream-connection.js';
import { targetField, actionForm } from './diffstream-actions.js';

export { Connection, ActionError };
export { valueAt, isSafeURL } from './diffstream-bindings.js';

// ---- The module's functions: one shared connection per page -----------------------------------------

let shared = null; // closed (connection.close()): the next connect starts another

/// Starts the page's connection (once; later calls return it). Options: `baseURL` (another server: its
/// own stream, CORS through --allow-origin), `token`, `mode` ('worker' | 'tab' | 'own'), `onError`, `poll`
/// (feeds to follow through their cacheable log behind a CDN: names, `prefix.*`, or a function) and `maxPolls`.
export function connect(options = {}) {
  if (!shared || shared.closed) shared = new Connection(options);
  else if (options.token !== undefined) shared.setToken(options.token);
  return shared;
}

/// Follows one feed: `handlers` is a function (every change) or `{snapshot, batch, state, deleted,
/// refused, unavailable, available, unreachable, change}`. Returns a subscription with `version`, `history`,
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
