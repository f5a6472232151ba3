import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyApiReferenceOptions } from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import { allowOnly } from './method-not-allowed.js';

/** The page of the interactive reference. */
export const DOCS_PATH = '/docs';

/** Where `npm run build` writes the page, the script and Scalar's version (scripts/docs-assets.mjs), from src/ and from dist/ alike. */
export const DOCS_ASSETS = fileURLToPath(new URL('../../../dist/docs/', import.meta.url));
export const PAGE_FILE = join(DOCS_ASSETS, 'index.html');
export const SCRIPT_FILE = join(DOCS_ASSETS, 'scalar.js');
export const VERSION_FILE = join(DOCS_ASSETS, 'scalar-version');

/** Scalar's script: the version in its path lets browsers keep it for good. */
export const scriptPath = (scalarVersion: string): string => `${DOCS_PATH}/${scalarVersion}/scalar.js`;

/**
 * The reference as Scalar's Fastify plugin renders it, with each of the
 * page's features that would reach Scalar's servers turned off: web fonts,
 * the AI agent, MCP generation (which uploads the document), the developer
 * toolbar, the button that opens Scalar's hosted client, and telemetry. The
 * document is the one at GET /openapi.json; its relative server makes "try
 * it" send to the server that served the page.
 */
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

/**
 * The browser may load from and connect to this server only, whatever a
 * button of the page tries, and sends no address of this server as a
 * referrer to a site a link leads to. Scalar's script and its inline start
 * need 'unsafe-inline' for scripts and styles; it uses no eval.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
} as const;

/**
 * GET /docs: Scalar's interactive reference of the served document, with
 * every asset from this server and no token needed.
 *
 * The plugin itself runs in the build (a development dependency), which
 * saves the page and the script it serves; the service streams the two files. Registered in the service,
 * the plugin held its 4.8 MB script in memory twice (the module and the
 * string it sends): 20 MiB more from the start, 30 MiB after the first visit.
 * Both routes are the reference's own: nothing runs for any other request.
 */
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
