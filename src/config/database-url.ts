import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './setting.js';
import { parsePostgresUrl, type PostgresUrl } from './postgres-url.js';

/** `shown` masks any password, for logs; `label` names the store for a person, never with a password. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string; readonly url: string; readonly shown: string; readonly label: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly shown: string; readonly label: string; readonly postgres: PostgresUrl };

/** `sqlite:PATH` (relative to the working directory), `sqlite:///ABSOLUTE/PATH`, or libpq's `postgres://` form. */
export function parseDatabaseUrl(text: string, source: string): DatabaseLocation {
  const url = text.trim();
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/i.exec(url);
  if (sqlite?.[1] !== undefined) {
    const path = sqlite[1];
    const absolute = path === ':memory:' || isAbsolute(path) ? path : resolve(path);
    return { kind: 'sqlite', path: absolute, url, shown: url, label: `SQLite store ${absolute}` };
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    const postgres = parsePostgresUrl(url, source);
    const hosts = postgres.hosts.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(',');
    const database = postgres.database === undefined ? "the user's database" : JSON.stringify(postgres.database);
    return { kind: 'postgres', url, shown: postgres.shown, label: `PostgreSQL store ${database} on ${hosts}`, postgres };
  }
  // The text may hold a password: it is not repeated.
  throw new ConfigError(`${source} must be a database URL: sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`);
}
