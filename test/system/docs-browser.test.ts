import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { errors, type Locator, type Page } from 'playwright-core';
import { VERSION_FILE } from '../../src/http/fastify/docs-routes.js';
import { sqlite } from '../helpers/backends.js';
import { launchChromium, screenshotPath, watchRequestsLeaving } from '../helpers/browser.js';
import { createToken, runCli, startServer } from '../helpers/processes.js';
import { until } from '../helpers/until.js';

const scalarVersion = readFileSync(VERSION_FILE, 'utf8').trim();

/** How long one try at a button may take, on one opening of the page: a page rendering on a loaded machine (two suites at once) took over 3 s. */
const CLICK_TIMEOUT_MS = 10_000;

/** The buttons of what Scalar offers that would send the document or the visit to Scalar's servers. */
const REACHING_OUT = /ask ai|agent|mcp|open api client|open in client|share|deploy|register/i;

test('in Chromium, /docs reaches only its server: every button clicked, then a token entered and a plant created from the page', async (t) => {
  const context = await launchChromium(t);
  if (context === undefined) return;
  const env = { DATABASE_URL: await sqlite.freshUrl(t) };
  const token = await createToken(env, 'browser');
  const server = await startServer(t, env);
  const leaving = watchRequestsLeaving(context, new URL(server.url).hostname);
  const page = context.pages()[0] ?? (await context.newPage());

  // Two visits: the second takes Scalar's script from the browser's cache.
  for (let visit = 0; visit < 2; visit++) {
    await page.goto(`${server.url}/docs`);
    await page.getByRole('heading', { name: 'Create a plant' }).waitFor();
  }
  // A mark in the server's access log: what the two visits loaded comes before it.
  await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'after-two-visits' } });
  await page.getByRole('heading', { name: 'Create a plant' }).scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshotPath('docs.png'), animations: 'disabled' });
  assert.equal(await page.getByRole('button', { name: REACHING_OUT }).count(), 0, 'no button that reaches out');

  // Each round of clicks starts afresh: what an earlier click chose (a language, a tab) is kept in the page's storage.
  const docs = `${server.url}/docs`;
  const openReference = async () => {
    if (page.url().startsWith(server.url)) await page.evaluate('localStorage.clear(); sessionStorage.clear()');
    await page.goto('about:blank');
    await page.goto(docs);
  };
  const openClient = async () => {
    await openReference();
    await page.getByRole('button', { name: /Test Request.*post \/plants/i }).click();
  };
  // On the reference, Escape closes any popover or dialog; in the client only the list a button opened, for Escape closes the client.
  const onReference = await clickEveryButton(page.locator('body'), { open: openReference, dismiss: () => page.keyboard.press('Escape') });
  assert.deepEqual(onReference.missed, [], 'every button of the reference was clicked');
  assert.ok(onReference.clicked.length >= 50, `clicked ${onReference.clicked.length} buttons of the reference`);
  const client = page.getByRole('dialog', { name: 'API Client' });
  const openList = page.locator('[role=listbox]:visible, [role=menu]:visible');
  const inClient = await clickEveryButton(client, {
    open: openClient,
    dismiss: async () => {
      if ((await openList.count()) === 0) return;
      await page.keyboard.press('Escape');
      await openList.first().waitFor({ state: 'hidden' });
    },
  });
  assert.deepEqual(inClient.missed, [], 'every button of the client was clicked');
  assert.ok(inClient.clicked.length >= 30, `clicked ${inClient.clicked.length} buttons of the client`);
  await openClient();
  assert.equal(await client.getByRole('button', { name: REACHING_OUT }).count(), 0, 'no button of the client that reaches out');
  assert.deepEqual(await linksCarryingTheServer(page, server.url), [], 'no link hands the document or this server to another site');

  // "Try it": a token in the page's Authentication, then a create sent from Scalar's client.
  await openReference();
  await page.getByPlaceholder('Token').first().fill(token);
  await page.getByRole('button', { name: /Test Request.*post \/plants/i }).click();
  await page.locator('.cm-content').first().click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText('{"id": 9007199254740993, "name": "Monstera deliciosa", "tag": "aroid"}');
  const created = page.waitForResponse((response) => response.request().method() === 'POST');
  await page.getByRole('button', { name: /Send Request/i }).click();
  const answer = await created;
  assert.equal(answer.url(), `${server.url}/plants`, 'sent to the server that served the page');
  assert.equal(answer.status(), 200);
  assert.equal(await answer.text(), '{"name":"Monstera deliciosa","tag":"aroid"}');
  await page.getByText('200 OK').first().waitFor();
  await page.screenshot({ path: screenshotPath('docs-create.png'), animations: 'disabled' });

  assert.deepEqual(leaving, [], 'no request left the server');
  const exported = await runCli(['plants', 'export'], env);
  assert.equal(exported.stdout, '{"id":9007199254740993,"name":"Monstera deliciosa","tag":"aroid"}\n', 'the plant is in the store, its id exact');

  assert.equal(await server.stop(), 0);
  const access = server.logs.filter((line) => line['msg'] === 'request');
  const twoVisits = access.slice(0, access.findIndex((line) => line['reqId'] === 'after-two-visits'));
  assert.deepEqual(
    twoVisits.map((line) => `${line['path']} ${line['status']}`),
    ['/docs 200', `/docs/${scalarVersion}/scalar.js 200`, '/openapi.json 200', '/docs 200', '/openapi.json 200'],
    'the second visit took the script from the cache',
  );
});

/** How many fresh openings of the page a button gets before it counts as missed. */
const ATTEMPTS = 3;

/** How long the list of buttons must stay the same before it is taken: Scalar renders in steps. */
const STILL_FOR_MS = 1_000;

/** How long one step of a try (reading the button, clicking it) may take before the button is marked afresh. */
const STEP_TIMEOUT_MS = 2_000;

type Outcome = 'clicked' | 'selected' | 'missed';

/** What one try at a button found: it is not (yet) shown, shown under another element, or shown but not (yet) taking the click. */
type Try = 'clicked' | 'selected' | 'absent' | 'covered' | 'not ready';

/**
 * Clicks every visible button within `scope` as a fresh `open` shows it, and
 * returns what it clicked and what it could not. A button is known by its
 * label and, among buttons with that label, its place, so that it is found
 * again after other clicks re-rendered the page. Before each click `dismiss`
 * closes what the last one opened. A re-render can replace the marked element
 * or cover it for a moment, so each try marks it afresh and tries again, in
 * short steps, for up to CLICK_TIMEOUT_MS; a button still not clicked then (a
 * click closed the scope or left the page) is tried on a fresh `open`, up to
 * ATTEMPTS times.
 */
async function clickEveryButton(
  scope: Locator,
  { open, dismiss }: { open: () => Promise<unknown>; dismiss: () => Promise<void> },
): Promise<{ clicked: string[]; missed: string[] }> {
  const buttons = scope.locator('button:visible:enabled');
  const listed = () => buttons.evaluateAll((all) => all.map((button) => (button.getAttribute('aria-label') ?? button.textContent ?? '').replace(/\s+/g, ' ').trim()));
  /** Marks the `occurrence`-th button labelled `label` (and no other); false when there is none. */
  const mark = (label: string, occurrence: number) =>
    buttons.evaluateAll(
      (all, [wanted, nth]) => {
        let seen = 0;
        let found = false;
        for (const button of all) {
          button.removeAttribute('data-click');
          const text = (button.getAttribute('aria-label') ?? button.textContent ?? '').replace(/\s+/g, ' ').trim();
          if (text === wanted && seen++ === nth) {
            button.setAttribute('data-click', '');
            found = true;
          }
        }
        return found;
      },
      [label, occurrence] as const,
    );
  const target = scope.locator('button[data-click]:visible:enabled');
  const step = { timeout: STEP_TIMEOUT_MS };
  /** Whether another element lies over the marked button's centre, where a pointer would click. */
  const covered = () =>
    target.evaluate((button) => {
      const { left, top, width, height } = button.getBoundingClientRect();
      const { document } = globalThis as unknown as { document: { elementFromPoint(x: number, y: number): Parameters<typeof button.contains>[0] } };
      const over = document.elementFromPoint(left + width / 2, top + height / 2);
      return over !== null && !button.contains(over);
    }, undefined);
  /**
   * One try at the button: a tab already selected takes no pointer events, by design, and there is nothing
   * to click. A pointer's click waits while the button is covered: `pointer` false sends the click to it instead.
   */
  const tryOnce = async (label: string, occurrence: number, press: () => Promise<void>, pointer: boolean): Promise<Try> => {
    if (!(await mark(label, occurrence))) return 'absent';
    try {
      if ((await target.getAttribute('aria-selected', step)) === 'true') return 'selected';
      if (pointer && (await covered())) return 'covered';
      await press();
      return 'clicked';
    } catch (error) {
      if (error instanceof errors.TimeoutError) return 'not ready';
      throw error;
    }
  };

  await open();
  let labels: string[] = [];
  let stillSince = Date.now();
  await until(`the buttons hold still for ${STILL_FOR_MS} ms`, async () => {
    const now = await listed();
    if (JSON.stringify(now) !== JSON.stringify(labels)) [labels, stillSince] = [now, Date.now()];
    return labels.length > 0 && Date.now() - stillSince >= STILL_FOR_MS;
  });

  const clicked: string[] = [];
  const missed: string[] = [];
  for (const [index, label] of labels.entries()) {
    const occurrence = labels.slice(0, index).filter((other) => other === label).length;
    let outcome: Outcome = 'missed';
    for (let attempt = 0; attempt < ATTEMPTS && outcome === 'missed'; attempt++) {
      await (attempt === 0 ? dismiss() : open());
      // A button covered for STILL_FOR_MS, and any on the last try, gets the click sent to itself: the client's
      // editor lies over its own "Copy JSON code" button, so no pointer can reach it, yet what it does must be proved too.
      const deadline = Date.now() + CLICK_TIMEOUT_MS;
      let coveredSince: number | undefined;
      for (;;) {
        const pointer = attempt < ATTEMPTS - 1 && (coveredSince === undefined || Date.now() - coveredSince < STILL_FOR_MS);
        const press = pointer ? () => target.click(step) : () => target.dispatchEvent('click', undefined, step);
        const tried = await tryOnce(label, occurrence, press, pointer);
        coveredSince = tried === 'covered' ? (coveredSince ?? Date.now()) : undefined;
        if (tried === 'clicked' || tried === 'selected') outcome = tried;
        // Absent right after the last button's click: that click changed the page, so open it afresh.
        if (outcome !== 'missed' || (tried === 'absent' && attempt === 0) || Date.now() >= deadline) break;
        await delay(50);
      }
    }
    if (outcome === 'clicked') clicked.push(label);
    if (outcome === 'missed') missed.push(label);
  }
  return { clicked, missed };
}

/** The links of the page to other sites that would hand them this server's address or its document. */
async function linksCarryingTheServer(page: Page, server: string): Promise<string[]> {
  const hrefs = await page.locator('a[href]').evaluateAll((links) => links.map((link) => (link as unknown as { href: string }).href));
  const { host } = new URL(server);
  return hrefs.filter((href) => new URL(href).host !== host && (href.includes(encodeURIComponent(host)) || href.includes(host) || /openapi/i.test(href)));
}
