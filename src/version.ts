import { readFileSync } from 'node:fs';

/** This build's version: package.json sits one folder above both src/ and dist/, so the same path serves tsx and the build. */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
