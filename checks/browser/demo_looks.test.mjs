// Node tests of the demo's presence looks (Public/demo-looks.js): the avatar's letters, its tooltip and
// the "+N" of the users a presence feed does not list. Run: node --test checks/browser/*.test.mjs
// (the page that uses them: test_presence_page.py, the demo's two browsers).
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const { initials, presenceTitle, presenceMore } = await importPublic('demo-looks.js');

test('initials: the first letters of the first two words, "?" without a name', () => {
  const table = [
    ['Alice', 'A'], ['Alice Liddell', 'AL'], ['  bob   the builder ', 'BT'], ['élodie', 'É'], ['😀 Smile', '😀S'],
    ['', '?'], ['   ', '?'], [undefined, '?'], [null, '?'], [42, '?'],
  ];
  for (const [name, expected] of table) assert.equal(initials(name), expected, JSON.stringify(name));
});

test('presenceTitle: the name and subject shown, and the streams past the first', () => {
  assert.equal(presenceTitle({ name: 'Alice', sub: 'alice@example.com', connections: 2 }), 'Alice (alice@example.com), 2 streams');
  assert.equal(presenceTitle({ name: 'Bob', connections: 1 }), 'Bob');
  assert.equal(presenceTitle({ connections: 1, since: 1764658000 }), 'Someone (no name given)');
  assert.equal(presenceTitle({ sub: 'carol@example.com', connections: 3 }), 'Someone (carol@example.com), 3 streams');
  assert.equal(presenceTitle(null), 'Someone (no name given)');
});

test('presenceMore: "+N" only when fewer are listed than present', () => {
  assert.equal(presenceMore({ count: 130, listed: 100 }), '+30');
  assert.equal(presenceMore({ count: 2, listed: 2 }), '');
  assert.equal(presenceMore({ count: 0, listed: 0 }), '');
  assert.equal(presenceMore({ count: 3 }), '');
  assert.equal(presenceMore(null), '');
});
