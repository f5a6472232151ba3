import type { TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { type Backend, sqlite } from './backends.js';
import { type AppConfig, buildApp } from '../../src/app.js';
import { parseDatabaseUrl, settings } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { issueToken } from '../../src/tokens/issue-token.js';

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  /** A valid token, issued for this app's store. */
  token: string;
  /** POST /plants with a valid token and `application/json`, unless told otherwise. */
  post(body: unknown, options?: { token?: string | null; contentType?: string | null; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
}

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
    backend?: Backend;
    /** Puts something between the app and the real store (a gate, a fault). */
    wrapStore?: (store: Store) => Store;
    /** The clock token expiry and the token cache go by; Date.now by default. */
    now?: () => number;
  } = {},
): Promise<TestApp> {
  const databaseUrl = await (config.backend ?? sqlite).freshUrl(t);
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
      authFailureLimit: config.authFailureLimit ?? settings.authFailureLimit.default,
      authFailureWindowMs: settings.authFailureWindowMs.default,
      metricsToken: config.metricsToken,
      trustProxy: settings.trustProxy.default,
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
  t.after(async () => {
    await app.close();
    await store.close();
  });
  const issued = await issueToken(store, { name: 'test' });
  if (!issued.issued) throw new Error(issued.problem);
  const token = issued.token;
  return {
    app,
    store,
    token,
    post: (body, options = {}) => {
      const headers: Record<string, string> = { ...options.headers };
      const presented = options.token === undefined ? token : options.token;
      if (presented !== null) headers['authorization'] = `Bearer ${presented}`;
      const contentType = options.contentType === undefined ? 'application/json' : options.contentType;
      if (contentType !== null) headers['content-type'] = contentType;
      return app.inject({
        method: 'POST',
        url: '/plants',
        headers,
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
  };
}

/** The Error body every error answer must have, with `error` equal to the status. */
export function errorBody(response: LightMyRequestResponse): { error: number; message: string } {
  const body = response.json() as { error: number; message: string };
  if (body.error !== response.statusCode || typeof body.message !== 'string' || Object.keys(body).length !== 2) {
    throw new Error(`not an Error body for ${response.statusCode}: ${response.body}`);
  }
  return body;
}
