import type { Connections } from './primary-pool.js';
import { preparedStatement, type PreparedStatements } from './prepared-statements.js';
import type { NewPlant } from '../../plants/plant.js';
import { CREATED, type CreatePlantResult, isTraceParent, outcomeAgainst, plantFromRow } from '../store.js';

export interface PlantRow {
  id: string;
  name: string;
  tag: string | null;
}

export function toNewPlant(row: PlantRow): NewPlant {
  return plantFromRow(BigInt(row.id), row.name, row.tag);
}

interface BatchOutcome {
  plants_created: number;
  messages_written: number;
  /** The ids created when some plant of the batch was not; null when all of them were, or none. */
  created_ids: string[] | null;
}

/**
 * A batch's webhook messages, packed in one webhook_batches row per subscription; ids and W3C traceparents
 * are both ordered by position in $1 so they stay aligned. MATERIALIZED: `created` is made once, not once per subscription.
 * Migration 10's create_plant_batch holds the same text: a change is a new migration (test/store/released-migrations.test.ts).
 */
export const OUTBOX_OF_TRACED = `created AS MATERIALIZED (
            SELECT array_agg(inserted.id) AS ids, NULL::TEXT[] AS trace_parents FROM inserted WHERE $4::text[] IS NULL
            UNION ALL
            SELECT array_agg(inserted.id ORDER BY sent.position),
                   CASE WHEN count(sent.trace_parent) > 0 THEN array_agg(sent.trace_parent ORDER BY sent.position) END
              FROM inserted JOIN unnest($1::bigint[], $4::text[]) WITH ORDINALITY AS sent (id, trace_parent, position) ON sent.id = inserted.id
             WHERE $4::text[] IS NOT NULL
          ), outbox AS (
            INSERT INTO webhook_batches (subscription_id, plant_ids, trace_parents, created_at)
            SELECT subscription.id, created.ids, created.trace_parents, now()
              FROM created CROSS JOIN webhook_subscriptions AS subscription
             WHERE subscription.removed_at IS NULL AND created.ids IS NOT NULL
            RETURNING cardinality(plant_ids) AS messages
          )`;

export const MESSAGES_WRITTEN = '(SELECT coalesce(sum(messages), 0) FROM outbox)::INTEGER';

/**
 * The group commit's statement ($1 ids, $2 names, $3 tags, $4 traceparents or NULL). The ids are distinct
 * (`PostgresPlantBatch` sends the first plant of each), so nothing rests on unnest's row order, which SQL does not promise.
 */
export const INSERT_PLANTS = `WITH ${insertedAndAnswer(MESSAGES_WRITTEN, `, ${OUTBOX_OF_TRACED}`)}`;

export const RESTORE_PLANTS = `WITH ${insertedAndAnswer('0', '')}`;

function insertedAndAnswer(messages: string, outbox: string): string {
  return `inserted AS (
  INSERT INTO plants (id, name, tag)
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
  ON CONFLICT (id) DO NOTHING
  RETURNING id
)${outbox}
SELECT count(*)::INTEGER AS plants_created,
       ${messages} AS messages_written,
       CASE WHEN count(*) < cardinality($1::bigint[]) THEN array_agg(inserted.id::TEXT) END AS created_ids
  FROM inserted`;
}

export const INSERT_PLANTS_STATEMENT = preparedStatement('insert_plants', INSERT_PLANTS);

/** For connections that keep no named statement (PgBouncer): the function's statement is still planned once a connection. */
export const CALL_CREATE_PLANT_BATCH =
  'SELECT plants_created, messages_written, created_ids FROM create_plant_batch($1::bigint[], $2::text[], $3::text[], $4::text[])';

type BatchValues = [string[], string[], (string | null)[], (string | null)[] | null];

/**
 * A batch of plants in one statement, so one transaction, each outcome as if created one after the
 * other: a later plant of a repeated id is answered here, against whichever plant holds the id.
 */
export class PostgresPlantBatch {
  readonly #pool: Connections;
  readonly #prepared: PreparedStatements;
  readonly #onMessages: () => void;

  constructor(pool: Connections, prepared: PreparedStatements, onMessages: () => void) {
    this.#pool = pool;
    this.#prepared = prepared;
    this.#onMessages = onMessages;
  }

  write(plants: readonly NewPlant[], traceParents?: readonly (string | undefined)[]): Promise<CreatePlantResult[]> {
    return this.#write(plants, traceParents, async (values) => {
      const { rows } = await this.#prepared.query<BatchOutcome>(INSERT_PLANTS_STATEMENT, values, CALL_CREATE_PLANT_BATCH);
      return rows[0]!;
    });
  }

  /** As `write`, without webhook messages; unnamed, as restores are rare and a parse is small next to a batch. */
  restore(plants: readonly NewPlant[]): Promise<CreatePlantResult[]> {
    return this.#write(plants, undefined, async ([ids, names, tags]) => {
      const { rows } = await this.#pool.query<BatchOutcome>(RESTORE_PLANTS, [ids, names, tags]);
      return rows[0]!;
    });
  }

  async #write(
    plants: readonly NewPlant[],
    traceParents: readonly (string | undefined)[] | undefined,
    insert: (values: BatchValues) => Promise<BatchOutcome>,
  ): Promise<CreatePlantResult[]> {
    if (plants.length === 0) return [];
    const firsts = firstOfEachId(plants);
    const ids = firsts.map((plant) => plant.id.toString());
    const names = firsts.map((plant) => plant.name);
    const tags = firsts.map((plant) => plant.tag ?? null);
    const traces = traceParents === undefined ? null : tracesOfFirsts(plants, firsts, traceParents);
    const outcome = await insert([ids, names, tags, traces]);
    if (outcome.messages_written > 0) this.#onMessages();
    if (outcome.plants_created === plants.length) return plants.map(() => CREATED);
    const createdIds = outcome.plants_created === firsts.length ? firsts.map((plant) => plant.id) : (outcome.created_ids ?? []).map((id) => BigInt(id));
    const created = new Set(createdIds);
    const firstOfId = new Map<bigint, number>();
    plants.forEach((plant, position) => firstOfId.has(plant.id) || firstOfId.set(plant.id, position));
    const isCreated = (plant: NewPlant, position: number) => created.has(plant.id) && firstOfId.get(plant.id) === position;
    const others = plants.filter((plant, position) => !isCreated(plant, position)).map((plant) => plant.id);
    const holders = others.length === 0 ? new Map<bigint, NewPlant>() : await this.#plantsById(others);
    return plants.map((plant, position): CreatePlantResult => {
      if (isCreated(plant, position)) return CREATED;
      return outcomeAgainst(holders.get(plant.id)!, plant);
    });
  }

  async #plantsById(ids: readonly bigint[]): Promise<Map<bigint, NewPlant>> {
    const { rows } = await this.#pool.query<PlantRow>('SELECT id::text, name, tag FROM plants WHERE id = ANY($1::bigint[])', [
      ids.map(String),
    ]);
    return new Map(rows.map((row) => [BigInt(row.id), toNewPlant(row)]));
  }
}

/** Aligned with `firsts`; null for all when none is valid, so the statement takes its path without traces. */
function tracesOfFirsts(plants: readonly NewPlant[], firsts: readonly NewPlant[], traceParents: readonly (string | undefined)[]): (string | null)[] | null {
  const seen = new Set<bigint>();
  const traces: (string | null)[] = [];
  plants.forEach((plant, position) => {
    if (firsts !== plants) {
      if (seen.has(plant.id)) return;
      seen.add(plant.id);
    }
    const traceParent = traceParents[position];
    traces.push(isTraceParent(traceParent) ? traceParent : null);
  });
  return traces.some((trace) => trace !== null) ? traces : null;
}

/** The batch itself when its ids are distinct, the common case, so that callers can compare by identity. */
function firstOfEachId(plants: readonly NewPlant[]): readonly NewPlant[] {
  const ids = new Set<bigint>();
  for (const plant of plants) ids.add(plant.id);
  if (ids.size === plants.length) return plants;
  ids.clear();
  return plants.filter((plant) => !ids.has(plant.id) && ids.add(plant.id));
}
