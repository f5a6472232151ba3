// The webhook part of the report of `npm run bench -- --webhook`: a table of every round and
// their medians, the goal rows, and notes on how it was measured and where a round fell short.
import { median } from './median.js';
import type { WebhookRound } from './webhook-round.js';

export interface WebhookReportSettings {
  connections: number;
  steadySeconds: number;
  drainLimitSeconds: number;
  loadGenerator: string;
}

/** Goals of the webhook delivery, in absolute terms. */
const DRAIN_GOAL_PER_SECOND = 5_000;
const OLDEST_PENDING_GOAL_SECONDS = 5;

const count = (value: number) => Math.round(value).toLocaleString('en');
const perSecond = (value: number) => (Number.isFinite(value) ? count(value) : '—');
const duration = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);

/** The median of the rounds' figures that were measured (NaN ones left out); NaN when none was. */
function medianOf(rounds: WebhookRound[], pick: (round: WebhookRound) => number): number {
  return median(rounds.map(pick).filter((value) => !Number.isNaN(value)));
}

/** The figures of one column of the table: how to show a round's, and how to show the rounds' median. */
type Column = { heading: string; round(round: WebhookRound): string; median(rounds: WebhookRound[]): string };

/** A column of a number shown alike for a round and for the median of the rounds. */
function figureColumn(heading: string, pick: (round: WebhookRound) => number, show: (value: number) => string): Column {
  return { heading, round: (round) => show(pick(round)), median: (rounds) => show(medianOf(rounds, pick)) };
}

const columns: Column[] = [
  figureColumn('creates/s under load', (round) => round.createsPerSecond, perSecond),
  figureColumn('deliveries/s under load', (round) => round.deliveriesPerSecondUnderLoad, perSecond),
  figureColumn('share of creates', (round) => round.deliveriesPerSecondUnderLoad / round.createsPerSecond, (value) => `${(value * 100).toFixed(1)} %`),
  figureColumn('deliveries/s after creates stop', (round) => round.drain.perSecond, perSecond),
  {
    heading: 'drain',
    round: ({ drain }) => (drain.left === 0 ? `${drain.seconds.toFixed(1)} s` : `${drain.seconds.toFixed(0)} s, ${count(drain.left)} left`),
    median: (rounds) => {
      const short = rounds.filter((round) => round.drain.left > 0).length;
      const seconds = `${medianOf(rounds, (round) => round.drain.seconds).toFixed(1)} s`;
      return short === 0 ? seconds : `${seconds}; ${short} of ${rounds.length} hit the limit`;
    },
  },
  figureColumn('CPU µs/delivery', (round) => round.drain.cpuUsPerDelivery, (value) => (Number.isNaN(value) ? '—' : value.toFixed(1))),
  {
    heading: 'steady creates/s (asked)',
    round: ({ steady }) => `${perSecond(steady.achievedPerSecond)} (${perSecond(steady.askedPerSecond)})`,
    median: (rounds) =>
      `${perSecond(medianOf(rounds, (round) => round.steady.achievedPerSecond))} (${perSecond(medianOf(rounds, (round) => round.steady.askedPerSecond))})`,
  },
  lagColumn('lag p50 at steady rate', (round) => round.steady.lagP50Ms),
  lagColumn('lag p99 at steady rate', (round) => round.steady.lagP99Ms),
  figureColumn('max oldest pending at steady rate', (round) => round.steady.oldestPending.maxSeconds, (value) =>
    Number.isNaN(value) ? 'no sample' : `${value.toFixed(2)} s`,
  ),
  {
    heading: 'invalid signatures',
    round: ({ receiver }) => `${count(receiver.invalid)} of ${count(receiver.received)}`,
    // Every round's, not a median: one invalid delivery is one too many.
    median: (rounds) => `${count(sum(rounds, (round) => round.receiver.invalid))} of ${count(sum(rounds, (round) => round.receiver.received))} (all rounds)`,
  },
];

/** A lag percentile; one that fell among the messages not delivered counts as the longest. */
function lagColumn(heading: string, pick: (round: WebhookRound) => number | null): Column {
  const show = (ms: number) => (Number.isNaN(ms) ? '—' : ms === Infinity ? 'not delivered' : duration(ms));
  return {
    heading,
    round: (round) => {
      const ms = pick(round);
      return ms === null ? `> ${round.steady.undeliveredLagAboveSeconds.toFixed(0)} s, not delivered` : duration(ms);
    },
    median: (rounds) => show(medianOf(rounds, (round) => pick(round) ?? Infinity)),
  };
}

function sum(rounds: WebhookRound[], pick: (round: WebhookRound) => number): number {
  return rounds.reduce((total, round) => total + pick(round), 0);
}

export function webhookReport(rounds: WebhookRound[], settings: WebhookReportSettings): { goalRows: string[]; section: string } {
  const tableRow = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const table = [
    tableRow(['round', ...columns.map((column) => column.heading)]),
    `|${['round', ...columns].map(() => '---').join('|')}|`,
    ...rounds.map((round, i) => tableRow([String(i + 1), ...columns.map((column) => column.round(round))])),
    tableRow(['median', ...columns.map((column) => column.median(rounds))]),
  ];
  const oldest = (round: WebhookRound) => round.steady.oldestPending.maxSeconds;
  const drainRate = medianOf(rounds, (round) => round.drain.perSecond);
  const oldestPending = medianOf(rounds, oldest);
  const steadyRate = medianOf(rounds, (round) => round.steady.achievedPerSecond);
  const invalid = sum(rounds, (round) => round.receiver.invalid);
  const received = sum(rounds, (round) => round.receiver.received);
  const verdict = (met: boolean) => (met ? 'met' : 'not met');
  const goalRows = [
    `| deliveries a second after creates stop | ≥ ${count(DRAIN_GOAL_PER_SECOND)} | ${Number.isNaN(drainRate) ? 'nothing was left to deliver' : `${count(drainRate)} /s`} | ${Number.isNaN(drainRate) ? 'not measured' : verdict(drainRate >= DRAIN_GOAL_PER_SECOND)} |`,
    `| oldest pending message at half the sustainable create rate | < ${OLDEST_PENDING_GOAL_SECONDS} s | ${Number.isNaN(oldestPending) ? 'no sample' : `${oldestPending.toFixed(2)} s`} (at ${perSecond(steadyRate)} creates/s) | ${verdict(oldestPending < OLDEST_PENDING_GOAL_SECONDS)} |`,
    `| every delivery's signature verifies | 0 invalid | ${count(invalid)} invalid of ${count(received)} | ${verdict(invalid === 0 && received > 0)} |`,
  ];

  const section = `## Webhook delivery: the service with one subscription

Each round's webhook part, in order: the ${settings.connections}-connection loaded run; a drain (until every plant created was delivered, at most ${settings.drainLimitSeconds} s); ${settings.steadySeconds} s of creates paced to half the round's sustainable create rate, 1 / (1 / creates a second under load + 1 / deliveries a second in the drain), the most the process can create and deliver (${settings.loadGenerator}, ${settings.connections} connections); a drain again; the lone run.

${table.join('\n')}

${notes(rounds, settings).join('\n')}
`;
  return { goalRows, section };
}

function notes(rounds: WebhookRound[], settings: WebhookReportSettings): string[] {
  const lines = [
    "- Receiver: `bench/webhook-receiver.mjs`, its own process, pinned to the load generator's core: it answers 204 at once, then verifies every delivery's Standard Webhooks signature (webhook-id, webhook-timestamp within 5 minutes, HMAC-SHA256 with the subscription's secret) and counts those that fail, with the reason of the first.",
    '- Deliveries/s under load: deliveries that arrived during the measurement (not its warm-up); share of creates: that over creates/s, what the dispatcher gets while the service is saturated.',
    "- Deliveries/s after creates stop: the first drain's deliveries over its time (to the last arrival); CPU µs/delivery: the service's user + system CPU time (/proc) over that drain, divided by its deliveries.",
    `- The receiver's own CPU time: ${medianOf(rounds, (round) => round.receiverCpuUsPerDelivery).toFixed(1)} µs a delivery (median of the rounds), taken from the load generator's core.`,
    "- Steady creates/s: achieved (of the rate asked). Lag: from the plant's commit (the body's `timestamp`) to its message's first arrival at the receiver, for every message of the steady phase, read after the drain that follows it; a percentile that falls among messages still not delivered then shows as such. Max oldest pending: the largest `plantstore_webhook_oldest_pending_seconds` of `GET /metrics` read about every 500 ms during the steady phase: when the dispatcher falls behind, that age grows through the phase, so a shorter phase shows less of it.",
  ];
  rounds.forEach((round, i) => {
    const { steady } = round;
    const problems: string[] = [];
    if (round.drain.left > 0) problems.push(`the drain after the loaded run hit its ${settings.drainLimitSeconds} s limit with ${count(round.drain.left)} messages left, so the steady phase began behind them`);
    // The oldest pending age of a dispatcher that falls behind grows with the phase: a short phase shows less of it.
    const { drainAfter } = steady;
    const behind = drainAfter.delivered + drainAfter.left;
    if (drainAfter.left > 0) {
      problems.push(`when the steady phase ended, ${count(behind)} messages were still to deliver, and the drain after it hit its limit with ${count(drainAfter.left)} left, so the lone run ran beside them`);
    } else if (drainAfter.seconds >= 1) {
      problems.push(`when the steady phase ended, ${count(behind)} messages were still to deliver; the last arrived ${drainAfter.seconds.toFixed(1)} s later`);
    }
    if (steady.undelivered > 0) problems.push(`${count(steady.undelivered)} of the steady phase's ${count(steady.created)} messages were not delivered ${steady.undeliveredLagAboveSeconds.toFixed(0)} s after it ended`);
    if (steady.achievedPerSecond < 0.95 * steady.askedPerSecond) problems.push(`the steady phase reached ${count(steady.achievedPerSecond)} creates/s of the ${count(steady.askedPerSecond)} asked`);
    if (steady.failedRequests > 0) problems.push(`${count(steady.failedRequests)} steady-phase requests failed or were not answered 2xx`);
    if (steady.oldestPending.failed > 0) problems.push(`${steady.oldestPending.failed} of the ${steady.oldestPending.samples + steady.oldestPending.failed} scrapes of /metrics failed or took over 5 s`);
    if (round.receiver.duplicates > 0) problems.push(`${count(round.receiver.duplicates)} deliveries were of a message already delivered`);
    if (round.receiver.firstProblem !== null) problems.push(`the first invalid delivery: ${round.receiver.firstProblem}`);
    if (problems.length > 0) lines.push(`- Round ${i + 1}: ${problems.join('; ')}.`);
  });
  return lines;
}
