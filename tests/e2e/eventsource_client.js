// A third-party SSE client (Debian's node-eventsource): prints each event as one JSON line.
// Usage: node eventsource_client.js URL
const EventSource = require('eventsource');
const source = new EventSource(process.argv[2]);
const print = (type) => (event) => console.log(JSON.stringify({ type, id: event.lastEventId, data: JSON.parse(event.data) }));
source.addEventListener('snapshot', print('snapshot'));
source.addEventListener('batch', print('batch'));
source.onerror = () => console.log(JSON.stringify({ type: 'error' }));
