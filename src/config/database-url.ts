import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './config-error.js';
import { parsePostgresUrl, type PostgresUrl } from './postgres-url.js';

/** A validated DATABASE_URL. `shown` is the URL with any password masked, for logs. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string; readonly url: string; readonly shown: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly shown: string; readonly postgres: PostgresUrl };

/**
 * `sqlite:PATH` (relative to the working directory), `sqlite:/ABSOLUTE/PATH` or
 * `sqlite:///ABSOLUTE/PATH`,
 * or `postgres://` / `postgresql://` in libpq's form, with one host or
 * several (see postgres-url.ts).
 */
export function parseDatabaseUrl(text: string, source: string): DatabaseLocation {
  const url = text.trim();
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/i.exec(url);
  if (sqlite?.[1] !== undefined) {
    const path = sqlite[1];
    return { kind: 'sqlite', path: path === ':memory:' || isAbsolute(path) ? path : resolve(path), url, shown: url };
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    const postgres = parsePostgresUrl(url, source);
    return { kind: 'postgres', url, shown: postgres.shown, postgres };
  }
  // The text may hold a password: it is not repeated.
  throw new ConfigError(`${source} must be a database URL: sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`);
}
