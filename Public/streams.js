// DiffStream page: the tab side of the connection layer. All tabs of an origin share ONE event stream
// per feed, held by a StreamHub (stream-hub.js) that runs in
//   'worker' a SharedWorker (stream-worker.js), where the browser has one;
//   'tab'    one elected tab, chosen with Web Locks, relaying over a BroadcastChannel;
//   'own'    this tab alone (no SharedWorker, and no Web Locks outside a secure context).
// `?streams=worker|tab|own` picks a path (the tests use it to run the fallbacks in Chromium).
//
//   const subscription = diffstreamStreams.subscribe(feed, { onSnapshot, onBatch, onDeleted, onUnauthorized, onState });
//   subscription.resync();  // the tab could not apply a batch: a fresh snapshot follows
//   subscription.close();   // a feed nobody shows any more has its stream closed
'use strict';

window.diffstreamStreams = (() => {
  const randomId = () => Math.random().toString(36).slice(2) + Date.now().toString(36);
  const tabId = randomId();
  const locks = navigator.locks; // only in a secure context
  const requested = new URLSearchParams(location.search).get('streams');
  const available = {
    worker: typeof SharedWorker === 'function',
    tab: typeof BroadcastChannel === 'function' && Boolean(locks),
    own: true,
  };
  let mode = available[requested] ? requested : ['worker', 'tab', 'own'].find((m) => available[m]);
  // The messages between tabs, worker and hub are versioned by name: a page of another version never
  // talks to a worker or an elected tab of this one.
  const NAME = 'diffstream-streams-1';
  const WELCOME_MS = 4000; // a shared worker that has not answered by then is taken as one that did not load
  const pageEnv = () => ({
    EventSource: window.EventSource, fetch: window.fetch.bind(window),
    setTimeout: window.setTimeout.bind(window), clearTimeout: window.clearTimeout.bind(window),
  });
  const historyOf = (id) => (typeof id === 'string' && id.lastIndexOf('.') > 0 ? id.slice(0, id.lastIndexOf('.')) : null);

  // ---- Subscriptions of this tab -------------------------------------------------------------------
  const subs = new Map(); // sub -> { feed, handlers, version, id }
  let nextSub = 1;
  let ready = false;      // the transport is up (our tab lock is held)
  let transport = null;
  const delivered = [];   // the last events handed to the page: [{ feed, event, from, version }], for tests and debugging

  const post = (message) => { if (ready) transport.post(message); };
  const subscribeMessage = (sub, entry) => ({ type: 'subscribe', sub, feed: entry.feed, version: entry.version, id: entry.id });

  /// The hub changed (a new worker or a new elected tab): subscribe again from where each feed stands,
  /// so the new hub resumes with the last event id and no batch is lost or applied twice.
  function resubscribeAll() {
    for (const [sub, entry] of subs) post(subscribeMessage(sub, entry));
  }

  function receive(message) {
    const entry = subs.get(message.sub);
    if (!entry) return; // a subscription we have left
    const call = (name, ...args) => {
      const handler = entry.handlers[name];
      if (!handler) return;
      if (message.type === 'event') {
        delivered.push({ feed: entry.feed, event: message.event, from: message.data.from, version: message.data.version });
        if (delivered.length > 1000) delivered.shift();
      }
      try {
        handler(...args);
      } catch (error) {
        console.warn(`could not apply the ${message.event || message.state} (${error.message}); subscribing afresh`);
        if (subs.get(message.sub) === entry) resync(message.sub, entry);
      }
    };
    if (message.type === 'state') return call('onState', message.state, { status: message.status, detail: message.detail });
    const { data, id } = message;
    switch (message.event) {
      case 'snapshot':
        Object.assign(entry, { version: data.version, id });
        return call('onSnapshot', data);
      case 'batch':
        // Already applied (it reached us twice around a change of hub): skip. Versions compare within one history.
        if (entry.version !== null && historyOf(id) === historyOf(entry.id) && data.version <= entry.version) return undefined;
        Object.assign(entry, { version: data.version, id });
        return call('onBatch', data);
      case 'deleted':
        subs.delete(message.sub);
        return call('onDeleted', data);
      case 'unauthorized':
        return call('onUnauthorized', data);
      default:
        return undefined;
    }
  }

  function resync(sub, entry) {
    Object.assign(entry, { version: null, id: null });
    post({ type: 'resync', sub });
  }

  function subscribe(feed, handlers) {
    const sub = nextSub++;
    const entry = { feed, handlers, version: null, id: null };
    subs.set(sub, entry);
    post(subscribeMessage(sub, entry));
    return {
      resync: () => { if (subs.get(sub) === entry) resync(sub, entry); },
      close: () => { if (subs.delete(sub)) post({ type: 'unsubscribe', sub }); },
    };
  }

  // ---- Transports ----------------------------------------------------------------------------------
  // Each has post(message) towards the hub; answers go to receive(message). A hub in this page answers
  // in a microtask, like a port would, so no handler runs inside subscribe().

  function ownTransport() {
    const hub = new StreamHub(pageEnv());
    return { post: (message) => hub.handle(tabId, message, (answer) => queueMicrotask(() => receive(answer))) };
  }

  function workerTransport() {
    let port = null;
    function start() {
      const worker = new SharedWorker('/stream-worker.js', { name: NAME });
      let welcomed = false;
      let abandoned = false;
      // The script could not be loaded (a proxy that does not serve it, a policy): take the next path.
      // Not every browser reports that with an 'error' event, so a worker that has not said welcome
      // within WELCOME_MS is given up too.
      const giveUp = () => {
        if (welcomed || abandoned) return;
        abandoned = true;
        port.onmessage = null;
        port.close();
        fallBack();
      };
      worker.addEventListener('error', giveUp);
      const timer = setTimeout(giveUp, WELCOME_MS);
      port = worker.port;
      port.onmessage = ({ data }) => {
        if (abandoned) return undefined;
        if (data.type !== 'welcome') return receive(data);
        welcomed = true;
        clearTimeout(timer);
        // The worker holds `diffstream-worker-<id>` while it lives; when we get it, it is gone: start another.
        if (data.worker && locks) {
          locks.request(`diffstream-worker-${data.worker}`, () => { start(); resubscribeAll(); });
        }
        return undefined;
      };
      port.start();
      port.postMessage({ type: 'hello', client: tabId });
    }
    start();
    addEventListener('pagehide', () => port.postMessage({ type: 'bye' }));
    addEventListener('pageshow', (event) => {
      if (event.persisted) { port.postMessage({ type: 'hello', client: tabId }); resubscribeAll(); }
    });
    return { post: (message) => port.postMessage(message), exit: () => port.postMessage({ type: 'exit' }) };
  }

  function tabTransport() {
    const channel = new BroadcastChannel(NAME);
    let leader = null; // the id of the tab that holds the streams
    let hub = null;    // ours, while we are that tab
    const watched = new Set();
    const watch = (client) => { // a follower holds `diffstream-tab-<id>` for its life: once we get it, it is gone
      if (watched.has(client)) return;
      watched.add(client);
      locks.request(`diffstream-tab-${client}`, () => { watched.delete(client); if (hub) hub.detach(client); });
    };
    channel.onmessage = ({ data }) => {
      if (data.type === 'leader') {
        if (data.leader !== leader && !hub) { leader = data.leader; resubscribeAll(); }
      } else if (data.type === 'who-leads') {
        if (hub) channel.postMessage({ type: 'leader', leader: tabId });
      } else if (data.to === 'leader') {
        if (!hub || data.leader !== tabId) return; // meant for a tab that no longer leads; the sender subscribes again
        watch(data.from);
        hub.handle(data.from, data.message, (answer) => channel.postMessage({ to: data.from, message: answer }));
      } else if (data.to === tabId) {
        receive(data.message);
      }
    };
    // Whoever gets the lock leads until its tab closes; then the next waiting tab gets it and takes over.
    locks.request(`${NAME}-leader`, () => {
      hub = new StreamHub(pageEnv());
      leader = tabId;
      channel.postMessage({ type: 'leader', leader: tabId });
      resubscribeAll();
      return new Promise(() => {});
    });
    channel.postMessage({ type: 'who-leads' });
    return {
      post(message) {
        if (hub) hub.handle(tabId, message, (answer) => queueMicrotask(() => receive(answer)));
        else if (leader) channel.postMessage({ to: 'leader', leader, from: tabId, message });
        // no leader known yet: when one announces itself, every subscription is sent again
      },
      get leading() { return hub !== null; },
    };
  }

  function startTransport() {
    transport = mode === 'worker' ? workerTransport() : mode === 'tab' ? tabTransport() : ownTransport();
    ready = true;
    resubscribeAll();
  }

  function fallBack() {
    if (mode !== 'worker') return; // already fell back
    console.warn(`the shared worker did not start; the ${available.tab ? 'elected tab' : 'tab'} holds the streams`);
    mode = available.tab ? 'tab' : 'own';
    startTransport();
  }

  // A hub (the worker, or the leading tab) watches our lock to learn when this tab is gone, so we hold
  // it before we talk to one.
  if (locks && mode !== 'own') {
    locks.request(`diffstream-tab-${tabId}`, () => { startTransport(); return new Promise(() => {}); });
  } else {
    startTransport();
  }

  // ---- The token, for the event stream (issue 13) --------------------------------------------------

  /// `EventSource` cannot send headers, so the token travels in the cookie `diffstreamAuthorization`,
  /// which every tab, the worker and the elected tab share. An empty token removes the cookie.
  function setToken(token) {
    const secure = location.protocol === 'https:' ? '; Secure' : '';
    document.cookie = token
      ? `diffstreamAuthorization=${encodeURIComponent(token)}; path=/; SameSite=Strict${secure}`
      : `diffstreamAuthorization=; path=/; SameSite=Strict; Max-Age=0${secure}`;
  }

  /// Tries this tab's refused or expired streams again now (say, with a new token).
  function retry() {
    for (const sub of subs.keys()) post({ type: 'retry', sub });
  }

  return {
    get mode() { return mode; },
    tabId,
    delivered,
    subscribe,
    setToken,
    retry,
    /// Whether this tab holds the streams (always in 'own' mode, never in 'worker' mode).
    get leading() { return mode === 'own' || Boolean(transport && transport.leading); },
    /// Test hook: ends the shared worker as if it had crashed.
    exitWorker() { if (transport && transport.exit) transport.exit(); },
  };
})();
