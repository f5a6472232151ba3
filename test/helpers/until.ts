/** How long `until` waits by default: a regression fails in seconds instead of hanging the run. */
export const UNTIL_TIMEOUT_MS = 15_000;

/**
 * Resolves once `condition` holds; rejects, naming `what`, after `timeoutMs`. It checks every 20 ms, or
 * four times as long as a check takes: a check that opens the store leaves the machine to the test's servers.
 */
export async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = UNTIL_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const checked = performance.now();
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, Math.max(20, 4 * (performance.now() - checked))));
  }
}

/** Resolves as `promise` does, or rejects, naming `what`, once `timeoutMs` have passed. */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting until ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
