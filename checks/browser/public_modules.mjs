// Loads the page's ES modules (Public/*.js) in Node for the .test.mjs files. Node 20.19+ and 22.12+ see
// the module syntax of a .js file with no package.json "type" and load it as it is. Older Node (Debian
// 12's nodejs is 18.19) reads such a file as CommonJS and fails, so there the modules are copied as .mjs
// files (their `./name.js` imports renamed to match) into a temporary directory and loaded from there.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PUBLIC = fileURLToPath(new URL('../../Public/', import.meta.url));
let copies = null;

function copied() {
  if (copies) return copies;
  copies = mkdtempSync(join(tmpdir(), 'diffstream-public-'));
  for (const file of readdirSync(PUBLIC).filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(join(PUBLIC, file), 'utf8').replace(/(from\s+'\.\/[^']+)\.js'/g, "$1.mjs'");
    writeFileSync(join(copies, file.replace(/\.js$/, '.mjs')), text);
  }
  return copies;
}

/// The module `Public/<name>` (say 'stream-hub.js').
export async function importPublic(name) {
  try {
    return await import(pathToFileURL(join(PUBLIC, name)).href);
  } catch (_) { // read as CommonJS (a SyntaxError on Node 18): the copy; a real error shows there too
    return import(pathToFileURL(join(copied(), name.replace(/\.js$/, '.mjs'))).href);
  }
}
