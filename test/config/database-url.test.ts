import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/config.js';

test('every SQLite form the docs name is read: relative, sqlite:/absolute and sqlite:///absolute', () => {
  const path = (url: string) => {
    const location = parseDatabaseUrl(url, 'DATABASE_URL');
    assert.equal(location.kind, 'sqlite');
    return location.kind === 'sqlite' ? location.path : '';
  };
  assert.equal(path('sqlite:data/plants.db'), resolve('data/plants.db'));
  assert.equal(path('sqlite:./data/plants.db'), resolve('data/plants.db'));
  assert.equal(path('sqlite:/var/lib/plantstore/plants.db'), '/var/lib/plantstore/plants.db');
  assert.equal(path('sqlite:///var/lib/plantstore/plants.db'), '/var/lib/plantstore/plants.db');
});

test('a PostgreSQL URL may carry a password, which is never shown', () => {
  const location = parseDatabaseUrl('postgres://app:s3cret@db.internal:5433/plants', 'DATABASE_URL');
  assert.equal(location.kind, 'postgres');
  assert.doesNotMatch(location.shown, /s3cret/);
  assert.match(location.shown, /db\.internal:5433\/plants/);
});
