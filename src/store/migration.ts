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

/**
 * The steps a schema at version `current` lacks, in order. Throws when the
 * schema is newer than the newest step: this build cannot know what it holds.
 */
export function pendingSteps(steps: readonly Migration[], current: number): Migration[] {
  const newest = steps.at(-1)?.version ?? 0;
  if (current > newest) {
    throw new Error(`the database schema is at version ${current}, newer than this build knows (${newest}); run a newer plantstore`);
  }
  return steps.filter((step) => step.version > current);
}
