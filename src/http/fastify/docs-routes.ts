import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyApiReferenceOptions } from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import { allowOnly } from './method-not-allowed.js';

export const DOCS_PATH = '/docs';

/** Where `npm run build` writes the page, the script and Scalar's version (scripts/docs-assets.mjs), from src/ and from dist/ alike. */
export const DOCS_ASSETS = fileURLToPath(new URL('../../../dist/docs/', import.meta.url));
export const PAGE_FILE = join(DOCS_ASSETS, 'index.html');
export const SCRIPT_FILE = join(DOCS_ASSETS, 'scalar.js');
export const VERSION_FILE = join(DOCS_ASSETS, 'scalar-version');

/** Scalar's script: the version in its path lets browsers keep it for good. */
export const scriptPath = (scalarVersion: string): string => `${DOCS_PATH}/${scalarVersion}/scalar.js`;

/** Every feature of the page that would reach Scalar's servers is off (MCP generation uploads the document). */
export const scalarOptions = (scalarVersion: string): FastifyApiReferenceOptions => ({
  routePrefix: DOCS_PATH,
  configuration: {
    url: '/openapi.json',
    pageTitle: 'Plant Store API reference',
    cdn: scriptPath(scalarVersion),
    withDefaultFonts: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: 'never',
    hideClientButton: true,
    telemetry: false,
    // A token pasted into the page stays in that tab, not in the browser's storage.
    persistAuth: false,
    // Without an icon of its own the browser asks for /favicon.ico, which is no path of the API.
    favicon: 'data:,',
  },
});

/** Load from and connect to this server only, and send no referrer; Scalar's inline start needs 'unsafe-inline' (no eval). */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
} as const;

/** The plugin runs in the build: in the service it holds its script in memory twice (bench/results/2026-11-23-sqlite-docs-page-memory.md). */
export function docsRoutes(app: FastifyInstance): void {
  if (!existsSync(PAGE_FILE) || !existsSync(SCRIPT_FILE) || !existsSync(VERSION_FILE)) {
    throw new Error(`the API reference is not built (${DOCS_ASSETS}): run npm run build, or serve with DOCS=off`);
  }
  const page = readFileSync(PAGE_FILE);
  const script = scriptPath(readFileSync(VERSION_FILE, 'utf8').trim());
  const scriptBytes = statSync(SCRIPT_FILE).size;

  app.get(DOCS_PATH, (_request, reply) => reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(page));
  app.get(script, (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('content-length', scriptBytes)
      .type('application/javascript; charset=utf-8')
      .send(createReadStream(SCRIPT_FILE)),
  );
  allowOnly(app, DOCS_PATH, ['GET']);
  allowOnly(app, script, ['GET']);
}
