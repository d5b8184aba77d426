// DiffStream page: `window.diffstreamStreams`, the connection layer of today's app.js, kept as a thin
// adapter over the ES module diffstream-streams.js (one multi-feed stream shared by every tab, see
// docs/client-js-protocol.md). It loads the module itself, so the page needs no module script; calls
// made before it is loaded wait for it. `?streams=worker|tab|own` picks a path (the tests use it).
//
//   const subscription = diffstreamStreams.subscribe(feed, { onSnapshot, onBatch, onDeleted, onUnauthorized, onState });
//   subscription.resync();  // the tab could not apply a batch: a fresh snapshot follows
//   subscription.close();   // a feed nobody shows any more leaves the stream
//
// onState(state, {status, detail}) gets 'reconnecting', and the refusals as before: 'error' (404: no such
// feed yet, retried), 'unauthorized' (401), 'forbidden' (403). onUnauthorized(data): the token expired.
'use strict';

window.diffstreamStreams = (() => {
  const requested = new URLSearchParams(location.search).get('streams');
  let streams = null;
  const waiting = []; // calls made before the module was loaded
  const whenReady = (f) => { if (streams) f(); else waiting.push(f); };
  const delivered = []; // the last events handed to the page: [{ feed, event, from, version }], for tests and debugging

  import('/diffstream-streams.js').then(({ openStreams }) => {
    streams = openStreams({ mode: requested || undefined });
    for (const f of waiting.splice(0)) f();
  }, (error) => console.error(`could not load the connection module: ${error.message}`));

  function subscribe(feed, handlers) {
    let subscription = null;
    let closed = false;
    let refused = false; // the last word was a refusal: its state stands until the feed shows again
    const call = (name, ...args) => {
      const handler = handlers[name];
      if (!handler) return;
      try {
        handler(...args);
      } catch (error) {
        console.warn(`could not apply the ${name.slice(2).toLowerCase()} of ${feed} (${error.message}); subscribing afresh`);
        if (subscription && !closed) subscription.resync();
      }
    };
    const listener = (event) => {
      if (closed) return;
      const { data } = event;
      if (event.type !== 'state') {
        delivered.push({ feed, event: event.type, from: data && data.from, version: data && data.version });
        if (delivered.length > 1000) delivered.shift();
      }
      const info = { status: data && data.status, detail: data && (data.detail || data.error) };
      switch (event.type) {
        case 'snapshot': refused = false; return call('onSnapshot', data);
        case 'batch': refused = false; return call('onBatch', data);
        case 'deleted': return call('onDeleted', data);
        case 'notfound': refused = true; return call('onState', 'error', { ...info, status: 404 });
        case 'forbidden': refused = true; return call('onState', 'forbidden', { ...info, status: 403 });
        case 'unauthorized':
          refused = true;
          if (data && data.error === 'token expired') return call('onUnauthorized', data);
          return call('onState', 'unauthorized', { ...info, status: 401 });
        case 'state':
          if (event.state === 'retrying' && !refused) return call('onState', 'reconnecting', {});
          return undefined;
        default:
          return undefined;
      }
    };
    whenReady(() => { if (!closed) subscription = streams.subscribe(feed, listener); });
    return {
      resync: () => whenReady(() => { if (subscription && !closed) subscription.resync(); }),
      close: () => { closed = true; whenReady(() => { if (subscription) subscription.close(); }); },
    };
  }

  /// `EventSource` cannot send headers, so the token travels in the cookie `diffstreamAuthorization`,
  /// which every tab, the worker and the elected tab share. An empty token removes the cookie.
  function setToken(token) {
    const secure = location.protocol === 'https:' ? '; Secure' : '';
    document.cookie = token
      ? `diffstreamAuthorization=${encodeURIComponent(token)}; path=/; SameSite=Strict${secure}`
      : `diffstreamAuthorization=; path=/; SameSite=Strict; Max-Age=0${secure}`;
  }

  return {
    get mode() { return streams ? streams.mode : requested; },
    get tabId() { return streams && streams.tabId; },
    delivered,
    subscribe,
    setToken,
    /// Asks again now for this tab's refused or expired feeds (say, with a new token).
    retry: () => whenReady(() => streams.retry()),
    /// Whether this tab holds the stream (always in 'own' mode, never in 'worker' mode).
    get leading() { return Boolean(streams && streams.leading); },
    /// For tests: ends the shared worker as if it had crashed.
    exitWorker: () => whenReady(() => streams.exitWorker()),
  };
})();
