/** The durable floor's batch insert on PostgreSQL ($1 ids as text, $2 names, $3 tags); see floor-insert.mjs. */
export const FLOOR_INSERT_PLANTS: string;
