/** One versioned schema change; each backend's `migrations.ts` applies its list in order at start. A released one is never edited. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** What opening a store did to its schema: `from` 0 means it made the schema, `from` equal to `to` that it changed nothing. */
export interface SchemaChange {
  from: number;
  to: number;
}

export interface StoreOpening {
  /** Whether a missing store (the SQLite file and folder, or the schema in an empty PostgreSQL database) is made; without it, a StoreMissing. */
  mayCreate?: boolean;
  /** Told what the migration at open did, when it did anything. */
  onSchemaChange?(change: SchemaChange): void;
}

/** A store's schema, read without changing anything: `found` false when there is no store (no file, database or table of versions). */
export type SchemaState =
  | { readonly found: false; readonly why: string }
  | { readonly found: true; readonly version: number; readonly newest: number; readonly pending: readonly Migration[] };

/** Why a PostgreSQL store is missing when its database is: a thing the service never makes. */
export const NO_DATABASE = 'no such database';

/** What opening without `mayCreate` throws when the store does not exist; `message` says what is missing. */
export class StoreMissing extends Error {
  override name = 'StoreMissing';
}

/** What opening throws when the schema is newer than this build's newest step: this build cannot know what it holds. */
export class SchemaTooNew extends Error {
  override name = 'SchemaTooNew';
  constructor(
    readonly version: number,
    readonly newest: number,
  ) {
    super(`the database schema is at version ${version}, newer than this build knows (${newest}); run a newer plantstore`);
  }
}

/** The steps a schema at version `current` lacks, in order. Throws SchemaTooNew when the schema is newer than the newest step. */
export function pendingSteps(steps: readonly Migration[], current: number): Migration[] {
  const newest = newestVersion(steps);
  if (current > newest) throw new SchemaTooNew(current, newest);
  return steps.filter((step) => step.version > current);
}

/** The state of a schema at `version` (undefined: there is none) against this build's `steps`. */
export function schemaState(steps: readonly Migration[], version: number | undefined, why: string): SchemaState {
  if (version === undefined) return { found: false, why };
  return { found: true, version, newest: newestVersion(steps), pending: steps.filter((step) => step.version > version) };
}

function newestVersion(steps: readonly Migration[]): number {
  return steps.at(-1)?.version ?? 0;
}
