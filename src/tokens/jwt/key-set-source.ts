import { readFile } from 'node:fs/promises';
import type { JSONWebKeySet } from 'jose';
import { keyServerUrlProblem } from './key-server-url.js';
import { keySetProblem } from './key-set-document.js';

/** One budget for the whole fetch, discovery document and key set together: a slow provider holds a request up this long at most. */
export const FETCH_TIMEOUT_MS = 5000;
export const FETCH_MAX_BYTES = 512 * 1024;

export interface KeySetSource {
  readonly location: string;
  /** Throws a KeySetSourceError when the key set cannot be had, or not before `deadline` aborts. */
  load(deadline: AbortSignal): Promise<JSONWebKeySet>;
}

export class KeySetSourceError extends Error {
  override name = 'KeySetSourceError';
}

/** JWT_ISSUER is not what the provider calls itself. */
export class IssuerMismatchError extends KeySetSourceError {
  override name = 'IssuerMismatchError';
}

export function keySetAt(url: string): KeySetSource {
  return { location: url, load: async (deadline) => asKeySet(await fetchJson(url, deadline), url) };
}

/**
 * OpenID Connect Discovery 1.0: the document's `issuer` must equal the configured one exactly (section 4.3). The key
 * set's URL is remembered once found, and looked up again after a fetch from it fails.
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

/** Read again on each refresh, so that replacing the file rotates the keys. */
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

// A redirect is refused rather than followed: it could lead from https to plain HTTP.
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
