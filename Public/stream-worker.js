// DiffStream: the SharedWorker (a module worker) that holds one event stream for all the feeds of every
// tab of this origin. Each tab connects a port, says hello with its id, and subscribes; see
// diffstream-streams.js for the tab side and stream-hub.js for the hub.
import { StreamHub } from './stream-hub.js';
import { presenceId, randomId } from './diffstream-util.js';

const workerId = randomId();
// One presence id for the worker's life: its tabs share one stream, one present user (issue 55).
const hub = new StreamHub({
  EventSource, fetch: (url, init) => fetch(url, init), setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (t) => clearTimeout(t),
  presenceID: presenceId(),
});
const locks = self.navigator && navigator.locks; // Web Locks: only in a secure context (https, or http://localhost)

/// While this worker lives it holds `diffstream-worker-<id>`: a tab waiting for that lock learns it is gone.
const holding = new Promise((resolve) => {
  if (!locks) { resolve(false); return; }
  locks.request(`diffstream-worker-${workerId}`, () => { resolve(true); return new Promise(() => {}); });
});

self.onconnect = (event) => {
  const port = event.ports[0];
  let client = null;
  port.onmessage = ({ data }) => {
    switch (data.type) {
      case 'hello':
        client = data.client;
        // The tab holds `diffstream-tab-<id>` for its whole life: once we get it, the tab is gone.
        if (locks) locks.request(`diffstream-tab-${client}`, () => hub.detach(client));
        holding.then((held) => port.postMessage({ type: 'welcome', worker: held ? workerId : null }));
        return;
      case 'bye': // the tab is being hidden or closed
        hub.detach(client);
        return;
      case 'exit': // for tests: the worker goes away as if it had crashed, and the tabs take over
        hub.closeAll();
        self.close();
        return;
      default:
        if (client !== null) hub.handle(client, data, (message) => port.postMessage(message));
    }
  };
  port.start();
};
