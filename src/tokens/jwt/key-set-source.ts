import { readFile } from 'node:fs/promises';
import type { JSONWebKeySet } from 'jose';
import { keyServerUrlProblem } from './key-server-url.js';
import { keySetProblem } from './key-set-document.js';

/**
 * A fetch of the issuer's keys gives up after this long, in milliseconds: one
 * budget for the whole of it, the discovery document and the key set it names
 * together, so that a slow provider holds a request up for this long at most...
 */
export const FETCH_TIMEOUT_MS = 5000;
/** ...or once the answer is larger than this, in bytes; real key sets and discovery documents are a few KiB. */
export const FETCH_MAX_BYTES = 512 * 1024;

/** Where the issuer's public keys come from: fetched from a URL, found by discovery, or read from a file. */
export interface KeySetSource {
  /** Where the keys are, for logs. */
  readonly location: string;
  /** The key set as it is now; throws a KeySetSourceError when it cannot be had, or not before `deadline` aborts. */
  load(deadline: AbortSignal): Promise<JSONWebKeySet>;
}

/** The key set could not be had; the message says why, for the log. */
export class KeySetSourceError extends Error {
  override name = 'KeySetSourceError';
}

/** The discovery document names another issuer: JWT_ISSUER is not what the provider calls itself. */
export class IssuerMismatchError extends KeySetSourceError {
  override name = 'IssuerMismatchError';
}

/** The key set at a URL (JWT_JWKS_URL, or the `jwks_uri` of a discovery document). */
export function keySetAt(url: string): KeySetSource {
  return { location: url, load: async (deadline) => asKeySet(await fetchJson(url, deadline), url) };
}

/**
 * The key set named by the issuer's discovery document (OpenID Connect
 * Discovery 1.0, section 4): `<issuer>/.well-known/openid-configuration`,
 * whose `issuer` must equal the configured issuer exactly (section 4.3) and
 * whose `jwks_uri` must be https like the issuer. The key set's URL is
 * remembered once found, and looked up again after a fetch from it fails.
 */
export function discoveredKeySet(issuer: string): KeySetSource {
  // Section 4: a terminating "/" of the issuer is removed before the well-known path is appended.
  const discoveryUrl = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  let keys: KeySetSource | undefined;
  return {
    location: discoveryUrl,
    load: async (deadline) => {
      keys ??= keySetAt(await jwksUriOf(discoveryUrl, issuer, deadline));
      try {
        return await keys.load(deadline);
      } catch (error) {
        keys = undefined;
        throw error;
      }
    },
  };
}

/** A key set in a local file, read again each time the keys are refreshed, so that replacing the file rotates them. */
export function keySetFile(path: string): KeySetSource {
  return {
    location: path,
    load: async (deadline) => {
      let text: string;
      try {
        text = await readFile(path, { encoding: 'utf8', signal: deadline });
      } catch (error) {
        throw new KeySetSourceError(`cannot read ${path}: ${(error as Error).message}`);
      }
      return asKeySet(parseJson(text, path), path);
    },
  };
}

async function jwksUriOf(discoveryUrl: string, issuer: string, deadline: AbortSignal): Promise<string> {
  const document = (await fetchJson(discoveryUrl, deadline)) as { issuer?: unknown; jwks_uri?: unknown } | null;
  if (typeof document !== 'object' || document === null) throw new KeySetSourceError(`${discoveryUrl} is not a discovery document`);
  if (document.issuer !== issuer) {
    throw new IssuerMismatchError(
      `the discovery document ${discoveryUrl} names the issuer ${JSON.stringify(document.issuer)}, not ${JSON.stringify(issuer)}`,
    );
  }
  const uri = document.jwks_uri;
  const problem = typeof uri === 'string' ? keyServerUrlProblem(uri) : 'a URL';
  if (problem !== undefined) throw new KeySetSourceError(`the jwks_uri of ${discoveryUrl} must be ${problem}, got ${JSON.stringify(uri)}`);
  return uri as string;
}

function asKeySet(document: unknown, location: string): JSONWebKeySet {
  const problem = keySetProblem(document);
  if (problem !== undefined) throw new KeySetSourceError(`${location} is not a usable JSON Web Key Set: ${problem}`);
  return document as JSONWebKeySet;
}

/**
 * GETs a JSON document, giving up when `deadline` aborts or past a size
 * limit. A redirect is refused rather than followed: it could lead from
 * https to plain HTTP.
 */
async function fetchJson(url: string, deadline: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    const response = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'error', signal: deadline });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new KeySetSourceError(`${url} answered ${response.status}`);
    }
    text = await readLimited(response, url);
  } catch (error) {
    if (error instanceof KeySetSourceError) throw error;
    if (deadline.aborted) throw new KeySetSourceError(`cannot fetch ${url}: the ${FETCH_TIMEOUT_MS} ms allowed for fetching the keys ran out`);
    const cause = (error as Error).cause instanceof Error ? `: ${((error as Error).cause as Error).message}` : '';
    throw new KeySetSourceError(`cannot fetch ${url}: ${(error as Error).message}${cause}`);
  }
  return parseJson(text, url);
}

async function readLimited(response: Response, url: string): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > FETCH_MAX_BYTES) {
    await response.body?.cancel();
    throw new KeySetSourceError(`${url} is larger than ${FETCH_MAX_BYTES} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > FETCH_MAX_BYTES) throw new KeySetSourceError(`${url} is larger than ${FETCH_MAX_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string, location: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new KeySetSourceError(`${location} is not JSON`);
  }
}
