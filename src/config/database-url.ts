import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './config-error.js';

/** A validated DATABASE_URL. `shown` is the URL with any password masked, for logs. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string; readonly url: string; readonly shown: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly shown: string };

/**
 * `sqlite:PATH` (relative to the working directory), `sqlite:///ABSOLUTE/PATH`,
 * or `postgres://` / `postgresql://` with what node-postgres reads from a URL
 * (`sslmode`, `application_name`, ...).
 */
export function parseDatabaseUrl(text: string, source: string): DatabaseLocation {
  const url = text.trim();
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/i.exec(url);
  if (sqlite?.[1] !== undefined) {
    const path = sqlite[1];
    return { kind: 'sqlite', path: path === ':memory:' || isAbsolute(path) ? path : resolve(path), url, shown: url };
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`${source} is not a valid PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)`);
    }
    if (parsed.password !== '') parsed.password = '*****';
    return { kind: 'postgres', url, shown: parsed.toString() };
  }
  // The text may hold a password: it is not repeated.
  throw new ConfigError(`${source} must be a database URL: sqlite:PATH or postgres://USER@HOST:PORT/DATABASE`);
}
