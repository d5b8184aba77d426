// DiffStream: how a tab reaches the StreamHub (stream-hub.js) that holds the shared event stream, one
// transport per mode of diffstream-streams.js:
//   ownTransport     a hub in this page, for this tab alone ('own');
//   workerTransport  the hub in the SharedWorker (stream-worker.js), over its port ('worker');
//   tabTransport     the hub in the tab elected with Web Locks, over a BroadcastChannel ('tab').
// Each takes the tab's streams (`TabStreams` of diffstream-streams.js: its `tabId`, `locks`, `closed`,
// `pageEnv()`, and `receive`, `resubscribeAll` and `fallBack`) and returns `{post(message), close()}`,
// with `exit()` (the worker) or `leading` (the elected tab) where they apply. Answers go to
// `tab.receive(message)`; a hub in this page answers in a microtask, like a port would, so no listener
// runs inside subscribe().
import { StreamHub } from './stream-hub.js';

/// The messages between tabs, worker and hub are versioned by name: a page of another version never
/// talks to a worker or an elected tab of this one.
export const NAME = 'diffstream-streams-2';
const WELCOME_MS = 4000; // a shared worker that has not answered by then is taken as one that did not load

/// A hub in this page, for this tab alone.
export function ownTransport(tab) {
  const hub = new StreamHub(tab.pageEnv());
  return {
    post: (message) => hub.handle(tab.tabId, message, (answer) => queueMicrotask(() => tab.receive(answer))),
    close: () => hub.closeAll(),
    hub,
  };
}

/// The hub in the origin's SharedWorker. A worker that does not start makes the tab fall back
/// (`tab.fallBack()`); one that goes away is replaced, and every subscription sent to the new one.
export function workerTransport(tab) {
  const { locks, tabId } = tab;
  let port = null;
  function start() {
    const worker = new SharedWorker(new URL('./stream-worker.js', import.meta.url), { name: NAME, type: 'module' });
    let welcomed = false;
    let abandoned = false;
    // The script could not be loaded (a proxy that does not serve it, a policy, no module workers):
    // take the next path. Not every browser reports that with an 'error' event, so a worker that has
    // not said welcome within WELCOME_MS is given up too.
    const giveUp = () => {
      if (welcomed || abandoned) return;
      abandoned = true;
      port.onmessage = null;
      port.close();
      tab.fallBack();
    };
    worker.addEventListener('error', giveUp);
    const timer = setTimeout(giveUp, WELCOME_MS);
    port = worker.port;
    port.onmessage = ({ data }) => {
      if (abandoned) return;
      if (data.type !== 'welcome') { tab.receive(data); return; }
      welcomed = true;
      clearTimeout(timer);
      // The worker holds `diffstream-worker-<id>` while it lives; when we get it, it is gone: start another.
      if (data.worker && locks) locks.request(`diffstream-worker-${data.worker}`, () => { if (!tab.closed) { start(); tab.resubscribeAll(); } });
    };
    port.start();
    port.postMessage({ type: 'hello', client: tabId });
  }
  start();
  const bye = () => port.postMessage({ type: 'bye' });
  const show = (event) => { if (event.persisted) { port.postMessage({ type: 'hello', client: tabId }); tab.resubscribeAll(); } };
  addEventListener('pagehide', bye);
  addEventListener('pageshow', show);
  return {
    post: (message) => port.postMessage(message),
    exit: () => port.postMessage({ type: 'exit' }),
    close: () => { bye(); removeEventListener('pagehide', bye); removeEventListener('pageshow', show); },
  };
}

/// The hub in one elected tab: whoever gets the leader lock holds it, and the other tabs talk to it
/// over a BroadcastChannel. When the leading tab closes, the next waiting tab gets the lock and takes over.
export function tabTransport(tab) {
  const { locks, tabId } = tab;
  const channel = new BroadcastChannel(NAME);
  let leader = null; // the id of the tab that holds the stream
  let hub = null;    // ours, while we are that tab
  let release = null;
  const watched = new Set();
  const watch = (client) => { // a follower holds `diffstream-tab-<id>` for its life: once we get it, it is gone
    if (watched.has(client)) return;
    watched.add(client);
    locks.request(`diffstream-tab-${client}`, () => { watched.delete(client); if (hub) hub.detach(client); });
  };
  channel.onmessage = ({ data }) => {
    if (data.type === 'leader') {
      if (data.leader !== leader && !hub) { leader = data.leader; tab.resubscribeAll(); }
    } else if (data.type === 'who-leads') {
      if (hub) channel.postMessage({ type: 'leader', leader: tabId });
    } else if (data.type === 'bye') {
      if (hub) hub.detach(data.from);
    } else if (data.to === 'leader') {
      if (!hub || data.leader !== tabId) return; // meant for a tab that no longer leads; the sender subscribes again
      watch(data.from);
      hub.handle(data.from, data.message, (answer) => channel.postMessage({ to: data.from, message: answer }));
    } else if (data.to === tabId) {
      tab.receive(data.message);
    }
  };
  // Whoever gets the lock leads until its tab closes; then the next waiting tab gets it and takes over.
  locks.request(`${NAME}-leader`, () => {
    if (tab.closed) return undefined;
    hub = new StreamHub(tab.pageEnv());
    leader = tabId;
    channel.postMessage({ type: 'leader', leader: tabId });
    tab.resubscribeAll();
    return new Promise((resolve) => { release = resolve; });
  });
  channel.postMessage({ type: 'who-leads' });
  return {
    post(message) {
      if (hub) hub.handle(tabId, message, (answer) => queueMicrotask(() => tab.receive(answer)));
      else if (leader) channel.postMessage({ to: 'leader', leader, from: tabId, message });
      // no leader known yet: when one announces itself, every subscription is sent again
    },
    get leading() { return hub !== null; },
    close() {
      if (hub) { hub.closeAll(); hub = null; }
      else channel.postMessage({ type: 'bye', from: tabId });
      if (release) release();
      channel.close();
    },
  };
}
