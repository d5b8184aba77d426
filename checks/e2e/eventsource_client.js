// A third-party SSE client: Debian's node-eventsource (package `node-eventsource`, module `eventsource`
// 2.x, whose export is the EventSource constructor itself). Prints one JSON line per thing that happens:
//   {"type":"open"} | {"type":"error","readyState":N} | {"type":"snapshot"|"batch"|"deleted","id":lastEventId,"data":{...}}
// Usage: NODE_PATH=/usr/share/nodejs node eventsource_client.js URL
const EventSource = require('eventsource');
const source = new EventSource(process.argv[2]);
const print = (line) => process.stdout.write(JSON.stringify(line) + '\n');
for (const type of ['snapshot', 'batch', 'deleted']) {
  source.addEventListener(type, (event) => print({ type, id: event.lastEventId, data: JSON.parse(event.data) }));
}
source.onopen = () => print({ type: 'open' });
source.onerror = () => print({ type: 'error', readyState: source.readyState });
process.on('SIGTERM', () => { source.close(); process.exit(0); });
