// The database's CPU time, read from /proc: what the benchmarks charge PostgreSQL for the work they cause.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The CPU seconds of every PostgreSQL server process, by pid: what the
 * database spends on a target's requests is the change between two readings.
 * A process that ended between them (an autovacuum worker) is not counted.
 */
export function postgresCpuSeconds(): Map<number, number> {
  const seconds = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      seconds.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // It ended while the directory was read.
    }
  }
  return seconds;
}

/** The CPU seconds the database spent between two readings of `postgresCpuSeconds`. */
export function cpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}
