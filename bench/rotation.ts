/**
 * Measures every target once a round, for `rounds` rounds, each round in the order of the last shifted by one,
 * so that no target is always measured first or after the same other one on a machine whose load drifts.
 * `measured` is told of each result as it comes; the results are returned by target, in round order.
 */
export async function inRotation<T>(
  targets: readonly string[],
  rounds: number,
  measure: (target: string) => Promise<T>,
  measured: (round: number, target: string, result: T) => void,
): Promise<Map<string, T[]>> {
  const results = new Map<string, T[]>(targets.map((target) => [target, []]));
  for (let round = 1; round <= rounds; round++) {
    for (let i = 0; i < targets.length; i++) {
      const target = targets[(i + round - 1) % targets.length]!;
      const result = await measure(target);
      results.get(target)!.push(result);
      measured(round, target, result);
    }
  }
  return results;
}
