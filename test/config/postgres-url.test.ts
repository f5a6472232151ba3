import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseDatabaseUrl, parsePostgresUrl } from '../../src/config/config.js';

test("a multi-host URL, as pg_autoctl show uri prints it, is taken apart in libpq's order", () => {
  const url = parsePostgresUrl('postgres://app@node1:5432,node2:6432,[::1]/plants?target_session_attrs=read-write&sslmode=require', 'DATABASE_URL');
  assert.deepEqual(url.hosts, [
    { host: 'node1', port: 5432 },
    { host: 'node2', port: 6432 },
    { host: '::1', port: 5432 },
  ]);
  assert.equal(url.targetSessionAttrs, 'read-write');
  assert.deepEqual(url.singleHostUrls, [
    'postgres://app@node1:5432/plants?sslmode=require',
    'postgres://app@node2:6432/plants?sslmode=require',
    'postgres://app@[::1]:5432/plants?sslmode=require',
  ]);
});

test("target_session_attrs defaults to libpq's any; a mode the service cannot write through is refused", () => {
  assert.equal(parsePostgresUrl('postgres://app@db/plants', 'DATABASE_URL').targetSessionAttrs, 'any');
  assert.equal(parsePostgresUrl('postgres://app@db/plants?target_session_attrs=primary', 'DATABASE_URL').targetSessionAttrs, 'primary');
  assert.throws(() => parsePostgresUrl('postgres://app@db/plants?target_session_attrs=standby', 'DATABASE_URL'), /target_session_attrs must be one of any, read-write, primary/);
});

test('every host is shown, and no password: not in the user part, not in the query', () => {
  const { shown } = parseDatabaseUrl('postgresql://app:hunter2@node1:5432,node2:5433/plants?password=hunter3&sslpassword=keypass&sslmode=verify-full', 'DATABASE_URL');
  assert.equal(shown, 'postgresql://app:*****@node1:5432,node2:5433/plants?password=*****&sslpassword=*****&sslmode=verify-full');
  assert.doesNotMatch(shown, /hunter|keypass/);
});

test('a password with an @ is the password, as node-postgres reads it: no part of it is shown or taken for the host', () => {
  const location = parseDatabaseUrl('postgres://app:p@hunter2@node1:5433/plants?sslmode=require', 'DATABASE_URL');
  assert.equal(location.shown, 'postgres://app:*****@node1:5433/plants?sslmode=require');
  assert.equal(location.label, 'PostgreSQL store "plants" on node1:5433');
  assert.ok(location.kind === 'postgres');
  assert.deepEqual(location.postgres.hosts, [{ host: 'node1', port: 5433 }]);
  assert.deepEqual(location.postgres.singleHostUrls, ['postgres://app:p@hunter2@node1:5433/plants?sslmode=require']);
});

test('every query parameter whose name speaks of a password, secret, token or key is masked, in any case; paths to certificates show', () => {
  const query = 'PASSWORD=hunter2&ssl_password=keypass&api_token=t0ken&client_secret=s3cret&sslkey=%2Fetc%2Fkey.pem&sslcert=%2Fetc%2Fcert.pem&sslmode=verify-full';
  const { shown } = parseDatabaseUrl(`postgres://app@db/plants?${query}`, 'DATABASE_URL');
  assert.equal(
    shown,
    'postgres://app@db/plants?PASSWORD=*****&ssl_password=*****&api_token=*****&client_secret=*****&sslkey=*****&sslcert=%2Fetc%2Fcert.pem&sslmode=verify-full',
  );
});

test('a malformed URL is refused without repeating it (it may hold a password)', () => {
  for (const text of ['postgres://app:hunter2@node1:99999/plants', 'postgres://app:hunter2@/plants', 'postgres://app:hunter2@a:1:2/plants']) {
    assert.throws(
      () => parsePostgresUrl(text, 'DATABASE_URL'),
      (error: unknown) => error instanceof ConfigError && error.message.startsWith('DATABASE_URL is not a valid PostgreSQL URL') && !error.message.includes('hunter2'),
    );
  }
});
