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

/** What a batch statement answers, in its one row. */
interface BatchOutcome {
  plants_created: number;
  messages_written: number;
  /** The ids created when some plant of the batch was not; null when all of them were, or none. */
  created_ids: string[] | null;
}

/**
 * The webhook messages of the plants a batch created (the rows of
 * `inserted`), packed: one webhook_batches row for each active subscription,
 * holding the ids in the order they were created, with the W3C traceparents
 * of the plants: $4, aligned with the ids $1 (distinct), or NULL when traces
 * are off. A claim unpacks them into webhook_messages rows only as
 * deliveries need them. Each
 * batch row's trace_parents is aligned with its plant_ids, and NULL when no
 * plant created has one. Without traces (`created`'s first branch) the
 * other branch's one-time filter keeps it from running. With traces both arrays are ordered
 * by the plants' position in $1, so they stay aligned whatever order the
 * join yields. Each branch answers one row, whose ids are NULL when its
 * filter is false. `created` is MATERIALIZED so that it is made once a batch:
 * inlined, it was made again for each subscription.
 *
 * Migration 10's create_plant_batch holds the same text, so that the
 * function and the statement write the same messages: a change to this is a
 * new migration of the function (test/store/released-migrations.test.ts).
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

/** How many messages `OUTBOX_OF_TRACED` wrote, as an INTEGER. */
export const MESSAGES_WRITTEN = '(SELECT coalesce(sum(messages), 0) FROM outbox)::INTEGER';

/**
 * The group commit's statement for a batch of plants with distinct ids ($1
 * ids, $2 names, $3 tags, $4 traceparents or NULL). It inserts each plant
 * unless its id is taken, writes the webhook messages of the plants it
 * created, with their traceparents, in the same statement (so in the same
 * transaction), and answers with one row: how many plants it created, the
 * messages written, and the ids created only when some plant was not (a
 * batch of new plants, the common one, needs none). The ids are
 * distinct because `PostgresPlantBatch` sends only the first plant of each
 * id: the statement then needs no `DISTINCT ON` (about 10 µs of the
 * database's CPU a batch) to insert the first, and does not rest on the order
 * in which the executor reads unnest's rows, which SQL does not promise.
 */
export const INSERT_PLANTS = `WITH ${insertedAndAnswer(MESSAGES_WRITTEN, `, ${OUTBOX_OF_TRACED}`)}`;

/** `INSERT_PLANTS` without the outbox, for plants restored rather than created (`restore`). */
export const RESTORE_PLANTS = `WITH ${insertedAndAnswer('0', '')}`;

/** The batch's insert and its answer, with `messages` as its messages_written and `outbox` as the query that writes them. */
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

/** `INSERT_PLANTS` as a named prepared statement (see `PreparedStatements`). */
export const INSERT_PLANTS_STATEMENT = preparedStatement('insert_plants', INSERT_PLANTS);

/**
 * The same batch as a call to the function of migration 10 (migration 4's,
 * with the traceparents), for connections that keep no named statement
 * (PgBouncer's transaction pooling): sent unnamed, the call is parsed for
 * every batch, but the function's own statement is planned once per server
 * connection, inside the server.
 */
export const CALL_CREATE_PLANT_BATCH =
  'SELECT plants_created, messages_written, created_ids FROM create_plant_batch($1::bigint[], $2::text[], $3::text[], $4::text[])';

/**
 * A batch statement's parameters: the ids (as text), names and tags of the
 * first plant of each id, and their traceparents: null when the batch came
 * with none (traces off), and a null for each plant without one.
 */
type BatchValues = [string[], string[], (string | null)[], (string | null)[] | null];

/**
 * The write of a batch of plants through the pool: one statement, so one
 * transaction, with the outcome of each plant as if they had been created one
 * after the other. The statement gets the first plant of each id and inserts
 * it unless the id is taken, with the webhook messages of the plants it
 * created; a later plant of an id is answered here, against whichever plant
 * then holds the id. `onMessages` is told after a batch that wrote messages.
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

  /**
   * Named while the connections keep statements; then as the call to the
   * schema's function, whose statement the server plans once per server
   * connection.
   */
  write(plants: readonly NewPlant[], traceParents?: readonly (string | undefined)[]): Promise<CreatePlantResult[]> {
    return this.#write(plants, traceParents, async (values) => {
      const { rows } = await this.#prepared.query<BatchOutcome>(INSERT_PLANTS_STATEMENT, values, CALL_CREATE_PLANT_BATCH);
      return rows[0]!;
    });
  }

  /**
   * The plants with the same outcomes as `write`'s, and no webhook message.
   * Sent unnamed, so through any pooler: restores are rare, and a batch's
   * parse is little next to its thousand rows.
   */
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
    // As many created as plants means every one was (the ids were distinct).
    if (outcome.plants_created === plants.length) return plants.map(() => CREATED);
    // The created ids come back only when some plant sent was not created (and are null when none was).
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

/**
 * The traceparents of `firsts` (see `firstOfEachId`), aligned with them, null
 * for a plant without a valid one; null for all when none has one, so that
 * the statement takes its path without traces.
 */
function tracesOfFirsts(plants: readonly NewPlant[], firsts: readonly NewPlant[], traceParents: readonly (string | undefined)[]): (string | null)[] | null {
  const seen = new Set<bigint>();
  const traces: (string | null)[] = [];
  plants.forEach((plant, position) => {
    // As firstOfEachId chose: every plant when the ids are distinct, else the first of each id.
    if (firsts !== plants) {
      if (seen.has(plant.id)) return;
      seen.add(plant.id);
    }
    const traceParent = traceParents[position];
    traces.push(isTraceParent(traceParent) ? traceParent : null);
  });
  return traces.some((trace) => trace !== null) ? traces : null;
}

/** The batch without the plants whose id an earlier plant of it has: the batch itself when its ids are distinct, the common case. */
function firstOfEachId(plants: readonly NewPlant[]): readonly NewPlant[] {
  const ids = new Set<bigint>();
  for (const plant of plants) ids.add(plant.id);
  if (ids.size === plants.length) return plants;
  ids.clear();
  return plants.filter((plant) => !ids.has(plant.id) && ids.add(plant.id));
}
