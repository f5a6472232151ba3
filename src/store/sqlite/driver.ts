import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { nodeLine } from '../../node-lines.js';

/** better-sqlite3's Database class, from whichever build runs on this Node.js line. */
export type SqliteDriver = typeof BetterSqlite3;

/**
 * Which package holds the driver for a Node.js version. better-sqlite3 12
 * aborts the process on Node.js 24 (`Assertion failed: (env) != nullptr` in
 * `RemoveEnvironmentCleanupHook` when V8 finalises a statement, at exit and
 * under load); better-sqlite3 13, built on Node-API and shipped prebuilt,
 * runs on 22 and newer but crashes on 20 at the first query. So 13 serves 22
 * and newer, and 12, wrapped in `plantstore-sqlite-node20` (packages/), serves
 * 20. Both are optional dependencies whose `engines` let npm install only the
 * one for the line it runs on, so Node.js 22 and 24 need no compiler.
 */
export function driverPackage(nodeVersion: string): string {
  return nodeLine(nodeVersion) <= 20 ? 'plantstore-sqlite-node20' : 'better-sqlite3';
}

let loaded: SqliteDriver | undefined;

/** The driver for the running Node.js, chosen and loaded once, at the first store opened. */
export function sqliteDriver(): SqliteDriver {
  loaded ??= loadDriver(process.versions.node, createRequire(import.meta.url));
  return loaded;
}

/**
 * Loads the driver package for `nodeVersion` with `load`. A driver that is
 * missing or does not load (node_modules installed with another Node.js
 * line, or a failed build) is one line that says what to do, not a stack.
 */
export function loadDriver(nodeVersion: string, load: (name: string) => unknown): SqliteDriver {
  const name = driverPackage(nodeVersion);
  try {
    return load(name) as SqliteDriver;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new Error(
      `the SQLite driver for Node.js ${nodeVersion} (${name}) could not be loaded: ${reason}; ` +
        'run `npm ci` with this Node.js (node_modules installed with another Node.js line holds the other driver)',
    );
  }
}
