// Node tests of the helpers the page's modules share (Public/diffstream-util.js): randomId, words, warnOnce.
// Run: node --test checks/browser/ (scripts/test.sh; test_stream_hub.py under pytest).
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const { randomId, words, warnOnce } = await importPublic('diffstream-util.js');

test('randomId: base-36 digits, different every time, even within one millisecond', () => {
  const ids = Array.from({ length: 1000 }, randomId);
  for (const id of ids) assert.match(id, /^[0-9a-z]{8,}$/);
  assert.equal(new Set(ids).size, ids.length);
});

test('randomId ends with the time in base 36', (t) => {
  t.mock.method(Date, 'now', () => 36 ** 3);
  t.mock.method(Math, 'random', () => 0.5);
  assert.equal(randomId(), 'i1000');
});

test('words: a camelCase name as lowercase words', () => {
  assert.equal(words('addItem'), 'add item');
  assert.equal(words('setHighScoreNow'), 'set high score now');
  assert.equal(words('rename'), 'rename');
  assert.equal(words('URLPath'), 'urlpath'); // only a lower-case letter before a capital starts a word
  assert.equal(words('x2Y'), 'x2y');
  assert.equal(words(''), '');
});

test('words: a name that is not a string is read as one', () => {
  assert.equal(words(42), '42');
  assert.equal(words(undefined), 'undefined');
});

test('warnOnce: each message once, with the library prefix', (t) => {
  const said = [];
  t.mock.method(console, 'warn', (message) => said.push(message));
  const message = `a message of this test ${randomId()}`;
  warnOnce(message);
  warnOnce(message);
  warnOnce(`${message}, another`);
  assert.deepEqual(said, [`diffstream: ${message}`, `diffstream: ${message}, another`]);
});

test('warnOnce: forgets after about 100 messages, so the set stays small', (t) => {
  const said = [];
  t.mock.method(console, 'warn', (message) => said.push(message));
  const first = `first ${randomId()}`;
  warnOnce(first);
  for (let i = 0; i < 110; i++) warnOnce(`filler ${i} ${randomId()}`);
  warnOnce(first);
  assert.equal(said.filter((m) => m === `diffstream: ${first}`).length, 2);
});
