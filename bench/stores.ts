import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parseDatabaseUrl } from '../src/config/config.js';
import type { NewPlant } from '../src/plants/plant.js';
import { openStore } from '../src/store/open-store.js';
import { issueToken } from '../src/tokens/issue-token.js';
import { addSubscription } from '../src/webhooks/subscriptions.js';

export type StoreKind = 'sqlite' | 'postgres';

/** A new, empty store for one measurement, with a token; removed by `cleanup`. */
export interface BenchStore {
  url: string;
  token: string;
  cleanup(): Promise<void>;
}

export async function freshStore(kind: StoreKind, postgresAdminUrl: string): Promise<BenchStore> {
  let url: string;
  let cleanup: () => Promise<void>;
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'plantstore-bench-'));
    url = `sqlite:${join(dir, 'bench.db')}`;
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const name = `plantstore_bench_${randomBytes(6).toString('hex')}`;
    await admin(postgresAdminUrl, `CREATE DATABASE ${name}`);
    const parsed = new URL(postgresAdminUrl);
    parsed.pathname = `/${name}`;
    url = parsed.toString();
    cleanup = () => admin(postgresAdminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
  const store = await openStore({ database: parseDatabaseUrl(url, 'bench'), databasePoolSize: 2 });
  try {
    const issued = await issueToken(store, { name: 'bench' });
    if (!issued.issued) throw new Error(issued.problem);
    // The last measurement's writes (a webhook round leaves hundreds of thousands of rows) flushed now, not by
    // the checkpointer during this one: each measurement starts on a quiet cluster, and pays only for its own.
    if (kind === 'postgres') await admin(postgresAdminUrl, 'CHECKPOINT');
    return { url, token: issued.token, cleanup };
  } finally {
    await store.close();
  }
}

/** A PostgreSQL URL as libpq's multi-host form: its server twice, the first primary kept. */
export function multiHostUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.username}@${parsed.host},${parsed.host}${parsed.pathname}?target_session_attrs=read-write`;
}

/**
 * Fills a store through the store layer, in large batches, not over HTTP, so
 * that ten million plants take minutes. Ids 1..count, below the load's ids.
 */
export async function preload(url: string, count: number, report: (done: number) => void): Promise<void> {
  const store = await openStore({ database: parseDatabaseUrl(url, 'bench'), databasePoolSize: 2 });
  const batch = 20_000;
  try {
    for (let start = 1; start <= count; start += batch) {
      const plants: NewPlant[] = [];
      for (let id = start; id < Math.min(start + batch, count + 1); id++) plants.push({ id: BigInt(id), name: `preloaded ${id}`, tag: 'bulk' });
      await store.createPlants(plants);
      report(Math.min(start + batch - 1, count));
    }
  } finally {
    await store.close();
  }
}

/**
 * Subscribes `receiverUrl` to the plants created in the store at `url`, as `plantstore webhook add`
 * does, and returns the subscription's signing secret, which the receiver verifies deliveries with.
 */
export async function subscribe(url: string, receiverUrl: string): Promise<string> {
  const store = await openStore({ database: parseDatabaseUrl(url, 'bench'), databasePoolSize: 2 });
  try {
    const added = await addSubscription(store.webhooks, receiverUrl, 'bench');
    if (!added.added) throw new Error(added.problem);
    return added.subscription.secret;
  } finally {
    await store.close();
  }
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
