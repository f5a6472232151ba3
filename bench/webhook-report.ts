// The webhook part of the report of `npm run bench -- --webhook`: a table of every round and
// their medians, the goal rows, and notes on how it was measured and where a round fell short.
import { median } from './median.js';
import type { WebhookPhases, WebhookRound } from './webhook-round.js';

/** Goals of webhook delivery, in absolute terms, with one subscription and its receiver on this machine. */
const DRAIN_GOAL_PER_SECOND = 6_000;
const LAG_P99_GOAL_MS = 3_000;
const SATURATED_DELIVERIES_GOAL_PER_SECOND = 500;
const SATURATED_CREATES_GOAL_SHARE = 0.9;

const count = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en') : '—');
const duration = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`);

/** The median of the rounds' figures that were measured (NaN ones left out); NaN when none was. */
function medianOf(rounds: WebhookRound[], pick: (round: WebhookRound) => number): number {
  return median(rounds.map(pick).filter((value) => !Number.isNaN(value)));
}

function sum(rounds: WebhookRound[], pick: (round: WebhookRound) => number): number {
  return rounds.reduce((total, round) => total + pick(round), 0);
}

type Column = { heading: string; pick(round: WebhookRound): number; show(value: number): string };

const share = (round: WebhookRound) => round.saturation.createsPerSecond / round.saturation.createsPerSecondWithout;
/** A lag that fell among messages never delivered counts as endless. */
const lagP99 = (round: WebhookRound) => round.steady.lagP99Ms ?? Infinity;

const columns: Column[] = [
  { heading: 'creates/s saturated, no subscription', pick: (round) => round.saturation.createsPerSecondWithout, show: count },
  { heading: 'creates/s saturated, 1 subscription', pick: (round) => round.saturation.createsPerSecond, show: count },
  { heading: 'share kept', pick: share, show: (value) => `${value.toFixed(2)} ×` },
  { heading: 'deliveries/s saturated', pick: (round) => round.saturation.deliveriesPerSecond, show: count },
  { heading: 'drain, 1 deliverer /s', pick: (round) => round.drains[0]!.perSecond, show: count },
  { heading: 'CPU µs/delivery', pick: (round) => round.drains[0]!.cpuUsPerDelivery, show: (value) => value.toFixed(1) },
  { heading: 'drain, 2 deliverers /s', pick: (round) => round.drains[1]!.perSecond, show: count },
  { heading: 'steady creates/s', pick: (round) => round.steady.achievedPerSecond, show: count },
  { heading: 'lag p50', pick: (round) => round.steady.lagP50Ms ?? Infinity, show: (ms) => (Number.isFinite(ms) ? duration(ms) : 'not delivered') },
  { heading: 'lag p99', pick: lagP99, show: (ms) => (Number.isFinite(ms) ? duration(ms) : 'not delivered') },
  { heading: 'max oldest pending', pick: (round) => round.steady.oldestPending.maxSeconds, show: (value) => (Number.isNaN(value) ? 'no sample' : `${value.toFixed(2)} s`) },
  { heading: 'kills', pick: (round) => round.kills.kills, show: count },
  { heading: 'created / delivered', pick: (round) => round.kills.created, show: count },
  { heading: 'duplicates', pick: (round) => round.kills.duplicates, show: count },
];

export function webhookReport(rounds: WebhookRound[], phases: WebhookPhases, loadGenerator: string): { goalRows: string[]; section: string } {
  const tableRow = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const cell = (column: Column, round: WebhookRound) =>
    column.heading === 'created / delivered' ? `${count(round.kills.created)} / ${count(round.kills.delivered)}` : column.show(column.pick(round));
  const table = [
    tableRow(['round', ...columns.map((column) => column.heading)]),
    `|${['round', ...columns].map(() => '---').join('|')}|`,
    ...rounds.map((round, i) => tableRow([String(i + 1), ...columns.map((column) => cell(column, round))])),
    tableRow(['median', ...columns.map((column) => (column.heading === 'created / delivered' ? '' : column.show(medianOf(rounds, column.pick))))]),
  ];
  const drainRate = medianOf(rounds, (round) => round.drains[0]!.perSecond);
  const twoRate = medianOf(rounds, (round) => round.drains[1]!.perSecond);
  const lag = medianOf(rounds, lagP99);
  const saturatedDeliveries = medianOf(rounds, (round) => round.saturation.deliveriesPerSecond);
  const kept = medianOf(rounds, share);
  const lost = sum(rounds, (round) => Math.max(0, round.kills.created - round.kills.delivered));
  const duplicates = sum(rounds, (round) => round.kills.duplicates);
  const invalid = sum(rounds, (round) => round.receiver.invalid);
  const received = sum(rounds, (round) => round.receiver.received);
  const verdict = (met: boolean) => (met ? 'met' : 'not met');
  const goalRows = [
    `| deliveries a second once creates stop, one deliverer | ≥ ${count(DRAIN_GOAL_PER_SECOND)} | ${count(drainRate)} /s (two deliverers: ${count(twoRate)} /s) | ${verdict(drainRate >= DRAIN_GOAL_PER_SECOND)} |`,
    `| lag p99 at ${count(phases.steadyPerSecond)} creates a second for ${phases.steadySeconds} s | ≤ ${duration(LAG_P99_GOAL_MS)} | ${Number.isFinite(lag) ? duration(lag) : 'not delivered'} | ${verdict(lag <= LAG_P99_GOAL_MS)} |`,
    `| deliveries a second under saturation (${loadGenerator}, ${phases.saturationConnections} connections) | ≥ ${SATURATED_DELIVERIES_GOAL_PER_SECOND} | ${count(saturatedDeliveries)} /s | ${verdict(saturatedDeliveries >= SATURATED_DELIVERIES_GOAL_PER_SECOND)} |`,
    `| creates under saturation with a subscription | ≥ ${SATURATED_CREATES_GOAL_SHARE} × without | ${kept.toFixed(2)} × | ${verdict(kept >= SATURATED_CREATES_GOAL_SHARE)} |`,
    `| plants not delivered after ${phases.kills} SIGKILLs of deliverers | 0 | ${count(lost)} (all rounds; ${count(duplicates)} duplicates) | ${verdict(lost === 0)} |`,
    `| every delivery's signature verifies | 0 invalid | ${count(invalid)} invalid of ${count(received)} | ${verdict(invalid === 0 && received > 0)} |`,
  ];

  const section = `## Webhook delivery

Each round, each phase on a fresh store with one subscription to the receiver; the service is \`bin/plantstore serve\` with its defaults, which start one \`plantstore deliver\` beside it at a lower priority, pinned to core 0 while its deliverer may run on either core:
- Saturated: ${loadGenerator} at ${phases.saturationConnections} connections for ${phases.saturationSeconds} s (after 2 s of warm-up), on a store with no subscription and then on one with a subscription; the share kept is the second's creates a second over the first's.
- Drains: ${count(phases.drainMessages)} plants written with their messages before any deliverer runs, then one \`plantstore deliver\` (and then two), until the receiver has every message: deliveries a second from their start to the last arrival; CPU µs/delivery: the deliverers' user + system time over it.
- Steady: ${count(phases.steadyPerSecond)} creates a second for ${phases.steadySeconds} s; lag: from each plant's commit (its body's \`timestamp\`) to its first arrival, for every message of the phase; max oldest pending: the largest \`plantstore_webhook_oldest_pending_seconds\` scraped every 500 ms.
- Kills: ${count(phases.killedPerSecond)} creates a second through \`serve\` with WEBHOOK_DELIVERY=off, beside two \`plantstore deliver\` (WEBHOOK_TIMEOUT_MS=2000, so a dead one's claims lapse after 5 s); every ${phases.killEveryMs} ms one is killed with SIGKILL and another started, ${phases.kills} times; then until every plant created (the server's \`plantstore_plant_creates_total\`) has arrived. Duplicates: deliveries of a webhook-id already received.

${table.join('\n')}

${notes(rounds).join('\n')}
`;
  return { goalRows, section };
}

function notes(rounds: WebhookRound[]): string[] {
  const lines = [
    "- Receiver: `bench/webhook-receiver.mjs`, its own process, pinned to the load generator's core: it answers 204 at once, then verifies every delivery's Standard Webhooks signature and counts those that fail.",
    `- The receiver's own CPU time: ${medianOf(rounds, (round) => round.receiverCpuUsPerDelivery).toFixed(1)} µs a delivery (median of the rounds).`,
  ];
  rounds.forEach((round, i) => {
    const problems: string[] = [];
    for (const drain of round.drains) if (drain.left > 0) problems.push(`the drain with ${drain.deliverers} deliverer(s) hit its limit with ${count(drain.left)} messages left`);
    const { steady, kills } = round;
    if (steady.undelivered > 0) problems.push(`${count(steady.undelivered)} of the steady phase's ${count(steady.created)} messages were not delivered`);
    if (steady.achievedPerSecond < 0.95 * steady.askedPerSecond) problems.push(`the steady phase reached ${count(steady.achievedPerSecond)} creates/s of the ${count(steady.askedPerSecond)} asked`);
    if (steady.failedRequests > 0) problems.push(`${count(steady.failedRequests)} steady-phase requests failed or were not answered 2xx`);
    if (kills.delivered < kills.created) problems.push(`${count(kills.created - kills.delivered)} plants created beside the kills never arrived`);
    if (kills.acknowledged > kills.created) problems.push(`the load generator counted ${count(kills.acknowledged)} 2xx, more than the ${count(kills.created)} plants the server created`);
    if (round.receiver.firstProblem !== null && round.receiver.invalid > 0) problems.push(`the first invalid delivery: ${round.receiver.firstProblem}`);
    problems.push(`after the kills, the last message arrived ${kills.caughtUpSeconds.toFixed(1)} s after the creates ended`);
    lines.push(`- Round ${i + 1}: ${problems.join('; ')}.`);
  });
  return lines;
}
