// The durable floor's batch insert on PostgreSQL (baseline-server.mjs): the least statement that stores a
// batch of plants, shared with bench/batch-statement-cost.ts so that both measure the same one.
export const FLOOR_INSERT_PLANTS =
  'INSERT INTO plants (id, name, tag) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) ON CONFLICT (id) DO NOTHING';
