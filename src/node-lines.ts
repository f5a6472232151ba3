/** The Node.js release lines the service is tested on; `engines` in package.json, docs/operations.md and CI say the same. */
export const SUPPORTED_NODE_LINES = [22, 24, 26] as const;

/** The oldest release it runs on: undici 8 and OpenTelemetry's SDK 3 need 22.19 and 22.15. */
export const OLDEST_NODE = '22.19.0';

const WHERE = 'docs/operations.md, "Supported Node.js"';

/** What the running Node.js means for the service: refused, run with a warning, or run. */
export type NodeLineCheck = { refuse: string } | { warn: string } | undefined;

/** Refuses a release older than OLDEST_NODE and the odd lines between supported ones (never LTS, past end of life); runs with a warning on a newer line. */
export function checkNodeLine(version: string): NodeLineCheck {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  const newest = Math.max(...SUPPORTED_NODE_LINES);
  const lines = `Node.js ${SUPPORTED_NODE_LINES.join(', ')} (${OLDEST_NODE} or newer)`;
  if (major > newest) {
    return { warn: `Node.js ${version} is newer than the lines this version is tested on (${SUPPORTED_NODE_LINES.join(', ')}); running on it (${WHERE})` };
  }
  if ((SUPPORTED_NODE_LINES as readonly number[]).includes(major) && compare([major, minor, patch], OLDEST_NODE) >= 0) return undefined;
  return {
    refuse:
      `Node.js ${version} is not supported: the plant store runs on ${lines}; ` +
      `install one from https://nodejs.org, or in a checkout put one first on PATH: PATH="$(scripts/node-line.sh 26)/bin:$PATH" (${WHERE})`,
  };
}

function compare(version: readonly number[], than: string): number {
  const other = than.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((version[i] ?? 0) !== (other[i] ?? 0)) return (version[i] ?? 0) - (other[i] ?? 0);
  return 0;
}
