import { ConfigError } from './setting.js';

/** libpq's `target_session_attrs` that a service which writes can use (libpq's meanings). */
export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'primary'] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

export interface PostgresHost {
  readonly host: string;
  readonly port: number;
}

export interface PostgresUrl {
  /** The servers, in the order they are tried. */
  readonly hosts: readonly PostgresHost[];
  /** Which server to keep: the first that answers (`any`), or the first that takes writes. */
  readonly targetSessionAttrs: TargetSessionAttrs;
  /** One URL a server, for node-postgres, without `target_session_attrs` (which it does not know). */
  readonly singleHostUrls: readonly string[];
  /** The URL with the password and every secret query parameter masked, for logs. */
  readonly shown: string;
  /** The database's name, or undefined when the URL names none (the server then takes the user's name). */
  readonly database: string | undefined;
}

/** The user part runs to the last `@` before the path, as in WHATWG URLs and node-postgres: a password may hold an `@`. */
const SCHEME = /^(postgres(?:ql)?):\/\/(?:([^/?#]*)@)?([^@/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i;
const DEFAULT_PORT = 5432;
/** Masked in any case, `sslkey` too, though a path: a path hidden costs less than a secret shown. */
const SECRET_PARAMETER = /pass|secret|token|key/i;

/**
 * libpq's form, with one server or several separated by commas, as `pg_autoctl show uri` prints.
 * Its ConfigError never repeats the text, which may hold a password.
 */
export function parsePostgresUrl(text: string, source: string): PostgresUrl {
  const match = SCHEME.exec(text.trim());
  const invalid = (why: string) => new ConfigError(`${source} is not a valid PostgreSQL URL (${why}); the form is postgres://USER:PASSWORD@HOST:PORT[,HOST:PORT...]/DATABASE`);
  if (match === null) throw invalid('it does not read as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE');
  const [, scheme, userinfo, hostList = '', path = '', query = ''] = match;
  const parameters = new URLSearchParams(query);
  const attrs = parameters.get('target_session_attrs') ?? 'any';
  if (!(TARGET_SESSION_ATTRS as readonly string[]).includes(attrs)) {
    throw new ConfigError(`${source}: target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}, got ${JSON.stringify(attrs)}`);
  }
  if (parameters.has('uselibpqcompat')) throw new ConfigError(`${source}: uselibpqcompat is not needed: sslmode always has libpq's meaning`);
  const hosts = hostList === '' ? [] : hostList.split(',').map((entry) => parseHost(entry, invalid));
  if (hosts.length === 0) throw invalid('it names no host');
  const passed = new URLSearchParams(query);
  passed.delete('target_session_attrs');
  const rest = passed.size === 0 ? '' : `?${passed.toString()}`;
  const user = userinfo === undefined ? '' : `${userinfo}@`;
  const singleHostUrls = hosts.map(({ host, port }) => `${scheme}://${user}${hostPart(host)}:${port}${path}${rest}`);
  const database = path.length > 1 ? decodeURIComponent(path.slice(1)) : undefined;
  return { hosts, targetSessionAttrs: attrs as TargetSessionAttrs, singleHostUrls, shown: shownUrl(scheme!, userinfo, hostList, path, query), database };
}

function parseHost(entry: string, invalid: (why: string) => ConfigError): PostgresHost {
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(entry);
  const plain = /^([^:[\]]+)(?::(\d+))?$/.exec(entry);
  const found = bracketed ?? plain;
  if (found === null) throw invalid(`a host is not HOST or HOST:PORT`);
  const port = found[2] === undefined ? DEFAULT_PORT : Number(found[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid('a port is not from 1 to 65535');
  return { host: decodeURIComponent(found[1]!), port };
}

function hostPart(host: string): string {
  return host.includes(':') ? `[${host}]` : encodeURIComponent(host);
}

function shownUrl(scheme: string, userinfo: string | undefined, hostList: string, path: string, query: string): string {
  let user = '';
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    user = `${colon === -1 ? userinfo : `${userinfo.slice(0, colon)}:*****`}@`;
  }
  const parameters = new URLSearchParams(query);
  for (const name of new Set(parameters.keys())) if (SECRET_PARAMETER.test(name)) parameters.set(name, '*****');
  const shownQuery = parameters.size === 0 ? '' : `?${parameters.toString().replaceAll('%2A', '*')}`;
  return `${scheme}://${user}${hostList}${path}${shownQuery}`;
}
