/**
 * The Node.js release lines the service runs on: 20 (this project's first
 * line, past its end of life in April 2026 but still on many machines), 22
 * and 24 (the active LTS). Each needs its own build of the SQLite driver
 * (src/store/sqlite/driver.ts), and the suite runs on 20 and 24 in CI. Odd
 * lines are short-lived and never LTS; newer even lines are added once the
 * suite passes on them. `engines` in package.json says the same.
 */
export const SUPPORTED_NODE_LINES = [20, 22, 24] as const;

/** The major version of a Node.js version string (`24.21.0` is 24). */
export function nodeLine(version: string): number {
  return Number.parseInt(version, 10);
}

/** One line saying why this Node.js cannot run the service, or undefined when it can. */
export function unsupportedNodeLine(version: string): string | undefined {
  if ((SUPPORTED_NODE_LINES as readonly number[]).includes(nodeLine(version))) return undefined;
  return `Node.js ${version} is not supported: the plant store runs on Node.js ${SUPPORTED_NODE_LINES.join(', ')} (docs/operations.md, "Supported Node.js")`;
}
