/** Resolves once SIGTERM or SIGINT arrives; later signals are absorbed, so a second Ctrl-C does not cut a graceful stop short. */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => resolve(signal));
  });
}
