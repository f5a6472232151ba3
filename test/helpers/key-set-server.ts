import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTHeaderParameters, type JWTPayload, SignJWT } from 'jose';
import { type AppConfig } from '../../src/app.js';
import { type TestApp, testApp } from './test-app.js';

export type Algorithm = 'RS256' | 'PS256' | 'ES256' | 'EdDSA';

/** A key pair made for one test, as an identity provider holds it. */
export interface SigningKey {
  readonly kid: string;
  readonly alg: Algorithm;
  readonly privateKey: CryptoKey;
  /** The public key as the key set publishes it, with `kid`, `alg` and `use`. */
  readonly jwk: JWK;
  /** The public key as PEM (SPKI), as an attacker could find it. */
  readonly pem: string;
}

export async function makeKey(alg: Algorithm, kid = `${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }, pem: await exportSPKI(publicKey) };
}

/**
 * An identity provider on loopback: its discovery document at
 * `<issuer>/.well-known/openid-configuration` and its key set at
 * `<issuer>/keys`, with the requests for each counted.
 */
export interface KeySetServer {
  readonly issuer: string;
  readonly jwksUrl: string;
  /** Requests for the key set so far, those answered with an error included. */
  readonly keySetFetches: number;
  readonly discoveryFetches: number;
  /** The keys the set holds from now on. */
  publish(...keys: SigningKey[]): void;
  /** While true, every request is answered 503, as by a provider that is down. */
  down: boolean;
  /** The issuer the discovery document names: the real one unless a test changes it. */
  discoveredIssuer: string;
  /** Bytes of padding the key set is sent with, in chunks and without a Content-Length. */
  padding: number;
  /** Milliseconds each answer waits before it is sent, as from a slow provider; Infinity never answers. */
  delayMs: number;
}

export async function startKeySetServer(t: TestContext): Promise<KeySetServer> {
  let published: JWK[] = [];
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    if (path === '/realms/plants/keys') state.keySetFetches++;
    if (path === '/realms/plants/.well-known/openid-configuration') state.discoveryFetches++;
    if (state.delayMs === 0) answer(path, response);
    else if (state.delayMs !== Infinity) {
      const timer = setTimeout(() => answer(path, response), state.delayMs);
      response.on('close', () => clearTimeout(timer));
    }
  });
  /** What the provider answers for `path`, now. */
  const answer = (path: string, response: ServerResponse) => {
    if (state.down) {
      response.writeHead(503).end();
      return;
    }
    const body =
      path === '/realms/plants/keys'
        ? { keys: published }
        : path === '/realms/plants/.well-known/openid-configuration'
          ? { issuer: state.discoveredIssuer, jwks_uri: state.jwksUrl }
          : undefined;
    if (body === undefined) {
      response.writeHead(404).end();
      return;
    }
    if (state.padding > 0 && path === '/realms/plants/keys') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write(JSON.stringify(body).slice(0, -1));
      for (let sent = 0; sent < state.padding; sent += 64 * 1024) response.write(`,"padding${sent}":"${'x'.repeat(64 * 1024)}"`);
      response.end('}');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/plants`;
  const state = {
    issuer,
    jwksUrl: `${issuer}/keys`,
    keySetFetches: 0,
    discoveryFetches: 0,
    publish: (...keys: SigningKey[]) => {
      published = keys.map((key) => key.jwk);
    },
    down: false,
    discoveredIssuer: issuer,
    padding: 0,
    delayMs: 0,
  };
  return state;
}

/** The audience the test apps expect. */
export const AUDIENCE = 'https://plantstore.test/api';

/** Claims of a token the test app accepts, for `server`; a test overrides what it checks (undefined leaves a claim out). */
export function claims(server: KeySetServer, overrides: Record<string, unknown> = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return { iss: server.issuer, aud: AUDIENCE, sub: 'client-42', scope: 'openid plants:write', iat: now, exp: now + 300, ...overrides };
}

/** A JWT signed with `key`, its header naming the key's `kid` and `alg` with `typ: at+jwt` unless told otherwise (undefined leaves a member out). */
export async function signToken(key: SigningKey, payload: JWTPayload, header: Record<string, unknown> = {}, crit?: Record<string, boolean>): Promise<string> {
  const protectedHeader = { alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header } as JWTHeaderParameters;
  return new SignJWT(payload).setProtectedHeader(protectedHeader).sign(key.privateKey, crit === undefined ? undefined : { crit });
}

export interface JwtTestApp extends TestApp {
  /** Where the app listens. */
  url: string;
  /** POST /plants over HTTP with this bearer token. */
  send(token: string, plant?: { id: number; name: string }): Promise<Response>;
}

type JwtSettings = Partial<Pick<AppConfig, 'jwtIssuer' | 'jwtAudience' | 'jwtJwksUrl' | 'jwtJwksFile' | 'jwtScope' | 'jwtClockSkewS' | 'jwtJwksCooldownMs' | 'jwtJwksMaxAgeMs'>>;

/** The real app on a fresh store, accepting the JWTs of `server` (by discovery unless told otherwise), listening on loopback. */
export async function jwtApp(
  t: TestContext,
  server: KeySetServer,
  jwt: JwtSettings = {},
  options: { authFailureLimit?: number; /** The clock the app goes by; tests move it past cooldowns and ages. */ now?: () => number; rateLimit?: string } = {},
): Promise<JwtTestApp> {
  const test = await testApp(t, {
    jwt: { jwtIssuer: server.issuer, jwtAudience: AUDIENCE, ...jwt },
    authFailureLimit: options.authFailureLimit ?? 1000,
    ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const url = await test.app.listen({ host: '127.0.0.1', port: 0 });
  let nextId = 1;
  return {
    ...test,
    url,
    send: (token, plant = { id: nextId++, name: 'Fern' }) =>
      fetch(`${url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(plant),
      }),
  };
}
