// DiffStream: the few small helpers that several of the page's modules share, one copy of each: an id
// for a tab or a worker, a name as words for labels and messages, and a warning said once.

/// A random id that tells the tabs and workers of one browser apart: random base-36 digits, then the
/// time in base 36 (two ids made in the same millisecond still differ by their random part).
export function randomId() {
  return Math.random().toString(36).slice(2) + Date.now().toString(36);
}

/// An id a client keeps across its streams' reopens (`presence-id`, docs/protocol.md "Who is here"):
/// 32 hexadecimal digits from the platform's generator.
export function presenceId() {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/// A camelCase name as lowercase words (`addItem` → `add item`), for buttons, placeholders and messages.
export function words(name) {
  return String(name).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

let warned = new Set();

/// `console.warn` with the library's prefix, once per message: a template or a model that is wrong is
/// wrong on every update, and the console should say so once. At most about 100 are remembered.
export function warnOnce(message) {
  if (warned.has(message)) return;
  if (warned.size > 100) warned = new Set();
  warned.add(message);
  console.warn(`diffstream: ${message}`);
}
