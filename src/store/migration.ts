/**
 * One versioned schema change of a backend. Each backend keeps its list in
 * its own `migrations.ts`, applied in order at start; a released migration is
 * never edited: the next version is added.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
