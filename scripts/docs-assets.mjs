// Writes the interactive API reference that the service serves at GET /docs:
// the page and the script that Scalar's Fastify plugin serves, saved into
// dist/docs/ (part of `npm run build`, after tsc). The plugin runs here, once a
// build, instead of in the service, which streams the two files from disk: in
// the service the plugin would hold its 4.8 MB script in memory (see
// src/http/fastify/docs-routes.ts).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import apiReference from '@scalar/fastify-api-reference';
import Fastify from 'fastify';
import { DOCS_ASSETS, DOCS_PATH, PAGE_FILE, SCRIPT_FILE, VERSION_FILE, scalarOptions } from '../dist/http/fastify/docs-routes.js';

// Pinned exactly in package.json (a development dependency: the service never loads it).
const { version } = JSON.parse(readFileSync(new URL('../node_modules/@scalar/fastify-api-reference/package.json', import.meta.url), 'utf8'));

// Where the plugin serves its page and its script under its route prefix.
const served = { [PAGE_FILE]: `${DOCS_PATH}/`, [SCRIPT_FILE]: `${DOCS_PATH}/js/scalar.js` };

const app = Fastify();
await app.register(apiReference, scalarOptions(version));
rmSync(DOCS_ASSETS, { recursive: true, force: true });
mkdirSync(DOCS_ASSETS, { recursive: true });
for (const [file, url] of Object.entries(served)) {
  const answer = await app.inject({ method: 'GET', url });
  if (answer.statusCode !== 200) throw new Error(`Scalar's plugin answered ${answer.statusCode} for ${url}: has its layout changed?`);
  writeFileSync(file, answer.rawPayload);
}
writeFileSync(VERSION_FILE, `${version}\n`);
await app.close();
