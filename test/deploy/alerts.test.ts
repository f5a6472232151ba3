import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { headingAnchors } from '../helpers/markdown.js';
import { requireOrSkip } from '../helpers/require-or-skip.js';
import { tempDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES = 'deploy/prometheus/alerts.yml';
const RULE_TESTS = 'deploy/prometheus/alerts.test.yml';
const DASHBOARD = 'deploy/grafana/plantstore.json';
const run = promisify(execFile);
/** promtool's unit tests evaluate days of series in a few seconds; a hang fails the test instead. */
const PROMTOOL_TIMEOUT_MS = 120_000;

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface AlertTest {
  alertname: string;
  exp_alerts?: unknown[];
}

const rules = (parse(readFileSync(join(ROOT, RULES), 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((group) => group.rules);
const alerts = rules.filter((rule) => rule.alert !== undefined);
const ruleTests = (parse(readFileSync(join(ROOT, RULE_TESTS), 'utf8')) as { tests: { alert_rule_test?: AlertTest[] }[] }).tests;
const dashboard = JSON.parse(readFileSync(join(ROOT, DASHBOARD), 'utf8')) as {
  templating: { list: { name: string; type: string }[] };
  panels: { type: string; title: string; datasource?: { uid: string }; targets?: { expr: string; datasource?: { uid: string } }[] }[];
};
const dashboardQueries = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })));


/** The cached promtool (scripts/promtool.sh --cached installs nothing), else one on PATH; undefined when neither is there. */
async function findPromtool(): Promise<string | undefined> {
  for (const [file, args] of [
    ['bash', [join(ROOT, 'scripts/promtool.sh'), '--cached']],
    ['bash', ['-c', 'command -v promtool']],
  ] as const) {
    const found = await run(file, args).then(({ stdout }) => stdout.trim(), () => '');
    if (found !== '') return found;
  }
  return undefined;
}

test('every alert has a severity of page or ticket, a summary, a description and a runbook that docs/operations.md has', () => {
  const headings = headingAnchors(readFileSync(join(ROOT, 'docs/operations.md'), 'utf8'));
  assert.ok(alerts.length > 0);
  for (const rule of alerts) {
    assert.match(rule.labels?.['severity'] ?? '', /^(page|ticket)$/, rule.alert);
    assert.ok(rule.annotations?.['summary'], `${rule.alert}: summary`);
    assert.ok(rule.annotations?.['description'], `${rule.alert}: description`);
    const [page, hash] = (rule.annotations?.['runbook_url'] ?? '').split('#');
    assert.equal(page, 'docs/operations.md', `${rule.alert}: runbook_url`);
    assert.ok(headings.has(hash!), `${rule.alert}: no heading #${hash} in docs/operations.md`);
  }
});

test('every alert has a unit test where it fires and one where it stays silent', () => {
  const checks = ruleTests.flatMap((group) => group.alert_rule_test ?? []);
  for (const name of new Set(alerts.map((rule) => rule.alert!))) {
    const own = checks.filter((check) => check.alertname === name);
    assert.ok(own.some((check) => (check.exp_alerts ?? []).length > 0), `${name} never fires in ${RULE_TESTS}`);
    assert.ok(own.some((check) => (check.exp_alerts ?? []).length === 0), `${name} is never shown silent in ${RULE_TESTS}`);
  }
});

test("every panel of the dashboard queries the dashboard's data source variable", () => {
  assert.ok(dashboard.templating.list.some((variable) => variable.name === 'datasource' && variable.type === 'datasource'));
  for (const panel of dashboard.panels.filter((panel) => panel.type !== 'row')) {
    assert.equal(panel.datasource?.uid, '${datasource}', panel.title);
    for (const target of panel.targets ?? []) assert.equal(target.datasource?.uid, '${datasource}', panel.title);
  }
});

test("promtool checks the rules, passes their unit tests, and parses the dashboard's queries", async (t) => {
  const promtool = await findPromtool();
  if (!requireOrSkip(t, 'promtool is not installed: `bash scripts/promtool.sh` installs it', promtool !== undefined)) return;
  const promtoolRun = (args: string[]) => run(promtool!, args, { cwd: ROOT, timeout: PROMTOOL_TIMEOUT_MS });

  await promtoolRun(['check', 'rules', RULES]);
  const { stdout } = await promtoolRun(['test', 'rules', RULE_TESTS]);
  assert.match(stdout, /SUCCESS/);

  // Each query as a recording rule, Grafana's variables given values, for promtool's parser.
  const queries = join(tempDir(t), 'dashboard-queries.yml');
  const asRules = dashboardQueries.map(({ expr }, i) => ({
    record: `dashboard:query_${i}`,
    expr: expr.replaceAll('$__rate_interval', '5m').replaceAll('$job', '.+'),
  }));
  writeFileSync(queries, JSON.stringify({ groups: [{ name: 'dashboard', rules: asRules }] }));
  await promtoolRun(['check', 'rules', queries]).catch((error: Error) => {
    const panels = dashboardQueries.map(({ panel }, i) => `dashboard:query_${i} is a query of the panel "${panel}"`);
    throw new Error([error.message, ...panels].join('\n'));
  });
});
