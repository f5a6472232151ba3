import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type Backend, existingStoreUrl, postgres, sqlite } from './backends.js';
import { type AppConfig, buildApp } from '../../src/app.js';
import { parseDatabaseUrl, settings } from '../../src/config/config.js';
import { type CatalogueEntry, type ErrorBody, errorCatalogue } from '../../src/errors.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { issueToken } from '../../src/tokens/issue-token.js';

/** An answer read off a real connection. */
export interface HttpAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: string;
  json(): unknown;
}

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  /** A valid token, issued for this app's store. */
  token: string;
  /** The port the app listens on, on 127.0.0.1; it starts listening at the first call. */
  port(): Promise<number>;
  /** One request over a real connection to the app, with a Content-Length for the payload, or `chunked`. */
  request(options: { method: string; url: string; headers?: Record<string, string>; payload?: string | Buffer; chunked?: boolean }): Promise<HttpAnswer>;
  /** POST /plants with a valid token and `application/json`, unless told otherwise. */
  post(body: unknown, options?: { token?: string | null; contentType?: string | null; headers?: Record<string, string> }): Promise<HttpAnswer>;
}

/** How long a test waits for one answer: far past any the server takes. */
const ANSWER_TIMEOUT_MS = 30_000;

/**
 * The real app on a fresh store, SQLite unless another backend is named,
 * with one token; closed after the test.
 */
export async function testApp(
  t: TestContext,
  config: {
    tokenCacheTtlMs?: number;
    bodyLimit?: number;
    writeQueueMax?: number;
    authFailureLimit?: number;
    metricsToken?: string;
    /** JWT settings (JWT_ISSUER and the rest); none by default, so only the store's tokens are accepted. */
    jwt?: Partial<Pick<AppConfig, 'jwtIssuer' | 'jwtAudience' | 'jwtJwksUrl' | 'jwtJwksFile' | 'jwtScope' | 'jwtClockSkewS' | 'jwtJwksCooldownMs' | 'jwtJwksMaxAgeMs'>>;
    docs?: boolean;
    headersTimeoutMs?: number;
    requestTimeoutMs?: number;
    maxConnectionsPerAddress?: number;
    keepAliveTimeoutMs?: number;
    /** TRUST_PROXY: the proxies whose X-Forwarded-For names the client; none by default. */
    trustProxy?: readonly string[];
    /** RATE_LIMIT as written (`10/1h`); none by default. */
    rateLimit?: string;
    backend?: Backend;
    /** Puts something between the app and the real store (a gate, a fault). */
    wrapStore?: (store: Store) => Store;
    /** The clock token expiry and the token cache go by; Date.now by default. */
    now?: () => number;
  } = {},
): Promise<TestApp> {
  const backend = config.backend ?? sqlite;
  // The app migrates a SQLite file at once; a PostgreSQL database comes migrated from its template.
  const databaseUrl = backend === postgres ? await existingStoreUrl(t, postgres) : await backend.freshUrl(t);
  const store = await openStore({ database: parseDatabaseUrl(databaseUrl, 'test'), databasePoolSize: 4 });
  const served = config.wrapStore?.(store) ?? store;
  const app = buildApp(
    {
      logLevel: 'silent',
      bodyLimit: config.bodyLimit ?? settings.bodyLimit.default,
      tokenCacheTtlMs: config.tokenCacheTtlMs ?? settings.tokenCacheTtlMs.default,
      writeBatchMax: settings.writeBatchMax.default,
      writeQueueMax: config.writeQueueMax ?? settings.writeQueueMax.default,
      headersTimeoutMs: config.headersTimeoutMs ?? settings.headersTimeoutMs.default,
      requestTimeoutMs: config.requestTimeoutMs ?? settings.requestTimeoutMs.default,
      maxConnections: settings.maxConnections.default,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress ?? settings.maxConnectionsPerAddress.default,
      keepAliveTimeoutMs: config.keepAliveTimeoutMs ?? settings.keepAliveTimeoutMs.default,
      authFailureLimit: config.authFailureLimit ?? settings.authFailureLimit.default,
      authFailureWindowMs: settings.authFailureWindowMs.default,
      rateLimit: config.rateLimit === undefined ? undefined : settings.rateLimit.parse(config.rateLimit, 'RATE_LIMIT'),
      metricsToken: config.metricsToken,
      trustProxy: config.trustProxy ?? settings.trustProxy.default,
      jwtIssuer: undefined,
      jwtAudience: undefined,
      jwtJwksUrl: undefined,
      jwtJwksFile: undefined,
      jwtScope: settings.jwtScope.default,
      jwtClockSkewS: settings.jwtClockSkewS.default,
      jwtJwksCooldownMs: settings.jwtJwksCooldownMs.default,
      jwtJwksMaxAgeMs: settings.jwtJwksMaxAgeMs.default,
      ...config.jwt,
      docs: config.docs ?? settings.docs.default,
    },
    served,
    config.now === undefined ? {} : { now: config.now },
  );
  // Keep-alive, as clients do: a request may be served on a connection that served others.
  const agent = new Agent({ keepAlive: true });
  t.after(async () => {
    agent.destroy();
    await app.close();
    await store.close();
  });
  const issued = await issueToken(store, { name: 'test' });
  if (!issued.issued) throw new Error(issued.problem);
  const token = issued.token;
  let listening: Promise<number> | undefined;
  // A test may have made the app listen itself, on a port of its choosing.
  const port = () =>
    (listening ??= (app.server.listening ? Promise.resolve() : app.listen({ host: '127.0.0.1', port: 0 })).then(() => (app.server.address() as { port: number }).port));
  const request: TestApp['request'] = async ({ method, url, headers = {}, payload, chunked = false }) => {
    const at = await port();
    return new Promise((resolve, reject) => {
      const sent = httpRequest({ host: '127.0.0.1', port: at, method, path: url, agent, timeout: ANSWER_TIMEOUT_MS, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({ statusCode: response.statusCode!, headers: response.headers, body, json: () => JSON.parse(body) });
        });
      });
      sent.on('timeout', () => sent.destroy(new Error(`no answer to ${method} ${url} within ${ANSWER_TIMEOUT_MS} ms`)));
      sent.on('error', reject);
      if (!chunked) {
        if (payload !== undefined) sent.setHeader('content-length', Buffer.byteLength(payload));
        sent.end(payload);
        return;
      }
      // A body written before end() has no known length: node:http sends it in chunks.
      if (payload !== undefined) sent.write(payload);
      sent.end();
    });
  };
  return {
    app,
    store,
    token,
    port,
    request,
    post: (body, options = {}) => {
      const headers: Record<string, string> = { ...options.headers };
      const presented = options.token === undefined ? token : options.token;
      if (presented !== null) headers['authorization'] = `Bearer ${presented}`;
      const contentType = options.contentType === undefined ? 'application/json' : options.contentType;
      if (contentType !== null) headers['content-type'] = contentType;
      return request({ method: 'POST', url: '/plants', headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });
    },
  };
}

/**
 * The Error body every error answer must have: `error` equal to the status,
 * a message, and the code of a catalogue entry answered with that status;
 * nothing else.
 */
export function errorBody(response: { statusCode: number; body: string; json(): unknown }): ErrorBody {
  const body = response.json() as ErrorBody;
  const entry = errorCatalogue[body.code] as CatalogueEntry | undefined;
  if (body.error !== response.statusCode || typeof body.message !== 'string' || entry?.status !== body.error || Object.keys(body).length !== 3) {
    throw new Error(`not an Error body for ${response.statusCode}: ${response.body}`);
  }
  return body;
}
