import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { createToken, startServer } from '../helpers/processes.js';

/** What watches the service: the alerts, their unit tests' series, and the dashboard. */
const FILES = ['deploy/prometheus/alerts.yml', 'deploy/prometheus/alerts.test.yml', 'deploy/grafana/plantstore.json'];
const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/** The service's metric names in a text; a recording rule's name (`job:plantstore_...:ratio_rate5m`) is not one. */
const namesIn = (text: string) => new Set([...text.matchAll(/(?<![\w:])plantstore_\w+(?![\w:])/g)].map(([name]) => name));

/**
 * The series names a scrape can hold, from its `# TYPE` lines, which
 * prom-client writes even for a metric with no sample yet: a histogram's
 * samples are NAME_bucket, NAME_sum and NAME_count, never NAME itself.
 */
function seriesNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name! + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(name! + suffix);
    else names.add(name!);
  }
  return names;
}

/** The labels whose values name what a series is of, rather than how it went: a misspelt route or method matches nothing, silently. */
const ROUTE_LABELS = ['route', 'method'];

test('every plantstore_ metric the alerts and the dashboard name is one GET /metrics serves, with the routes, methods and buckets they read', async (t) => {
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const server = await startServer(t, env);
  // A create and a readiness poll first, so that the request histogram has the series the rules select.
  const token = await createToken(env, 'metrics');
  const created = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"id":1,"name":"Fern"}',
  });
  assert.equal(created.status, 200);
  assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
  const response = await fetch(`${server.url}/metrics`);
  assert.equal(response.status, 200);
  const exposition = await response.text();
  const served = seriesNames(exposition);

  for (const file of FILES) {
    const text = read(file);
    const used = namesIn(text);
    assert.ok(used.size > 0, `${file} names no plantstore_ metric`);
    for (const name of used) assert.ok(served.has(name), `${file}: ${name} is not served by GET /metrics`);
    for (const [, name, matchers] of text.matchAll(/(plantstore_\w+)\{([^}]*)\}/g)) {
      for (const [, label, value] of matchers!.matchAll(/(\w+)=\\?"([^"\\]*)\\?"/g)) {
        if (!ROUTE_LABELS.includes(label!)) continue;
        const series = new RegExp(`^${name}\\{[^}]*${label}="${value!.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}"`, 'm');
        assert.match(exposition, series, `${file}: ${name} has no series with ${label}="${value}"`);
      }
    }
    for (const [, histogram, le] of text.matchAll(/(plantstore_\w+)_bucket\{[^}]*le=\\?"([^"\\]+)\\?"/g)) {
      const bucket = new RegExp(`^${histogram}_bucket\\{le="${le!.replaceAll('.', '\\.')}"`, 'm');
      assert.match(exposition, bucket, `${file}: ${histogram} has no bucket le="${le}"`);
    }
  }
});
