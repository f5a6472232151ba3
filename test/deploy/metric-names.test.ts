import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { sqlite } from '../helpers/backends.js';
import { startServer } from '../helpers/processes.js';

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

test('every plantstore_ metric the alerts and the dashboard name is one GET /metrics serves, and every bucket they read is one of its buckets', async (t) => {
  const server = await startServer(t, { DATABASE_URL: await sqlite.freshUrl(t) });
  // One answer first, so that the request histogram has a series whose buckets show.
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  const response = await fetch(`${server.url}/metrics`);
  assert.equal(response.status, 200);
  const exposition = await response.text();
  const served = seriesNames(exposition);

  for (const file of FILES) {
    const text = read(file);
    const used = namesIn(text);
    assert.ok(used.size > 0, `${file} names no plantstore_ metric`);
    for (const name of used) assert.ok(served.has(name), `${file}: ${name} is not served by GET /metrics`);
    for (const [, histogram, le] of text.matchAll(/(plantstore_\w+)_bucket\{[^}]*le=\\?"([^"\\]+)\\?"/g)) {
      const bucket = new RegExp(`^${histogram}_bucket\\{le="${le!.replaceAll('.', '\\.')}"`, 'm');
      assert.match(exposition, bucket, `${file}: ${histogram} has no bucket le="${le}"`);
    }
  }
});
