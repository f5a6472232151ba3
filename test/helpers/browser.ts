import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium: the browser tests never use one that a tool downloads. */
export const CHROMIUM = '/usr/bin/chromium';

/** What Chromium needs on these machines (no sandbox as root, no GPU), and nothing it would fetch by itself. */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where a screenshot named `name` goes: test-results/, which git ignores. */
export function screenshotPath(name: string): string {
  return join(fileURLToPath(new URL('../../test-results/', import.meta.url)), name);
}

/**
 * Chromium with a fresh profile, closed after the test; undefined when it is
 * not installed, after skipping the test with one line that says how to
 * install it. Under CI=true a missing Chromium fails the test instead.
 */
export async function launchChromium(t: TestContext): Promise<BrowserContext | undefined> {
  if (!existsSync(CHROMIUM)) {
    const missing = `Chromium is not installed at ${CHROMIUM}: install it with \`apt-get install chromium\` to run the browser test`;
    assert.notEqual(process.env['CI'], 'true', missing);
    t.skip(missing);
    return undefined;
  }
  mkdirSync(screenshotPath(''), { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'plantstore-chromium-'));
  // Removed only once Chromium has exited: it writes to its profile until then, and a
  // removal before the close (hooks run in the order they were added) met a folder
  // being filled (ENOTEMPTY), failed, and left the browser running.
  const removeProfile = () => rmSync(profile, { recursive: true, force: true, maxRetries: 3 });
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1400, height: 1000 },
    });
  } catch (error) {
    removeProfile();
    throw error;
  }
  context.setDefaultTimeout(10_000);
  t.after(async () => {
    await context.close();
    removeProfile();
  });
  return context;
}

/**
 * Every request the context makes, from any page or popup, whose host is not
 * `host`: the test asserts there are none. (Playwright's routing would also
 * stop them, but it turns the browser's cache off, which the test measures.)
 */
export function watchRequestsLeaving(context: BrowserContext, host: string): string[] {
  const leaving: string[] = [];
  const leaves = (url: string) => {
    const { protocol, hostname } = new URL(url);
    return !['data:', 'blob:', 'about:'].includes(protocol) && hostname !== host;
  };
  context.on('request', (request) => {
    if (leaves(request.url())) leaving.push(`${request.method()} ${request.url()}`);
  });
  const watchSockets = (page: Page) =>
    page.on('websocket', (socket) => {
      if (leaves(socket.url())) leaving.push(`WebSocket ${socket.url()}`);
    });
  context.pages().forEach(watchSockets);
  context.on('page', watchSockets);
  return leaving;
}
