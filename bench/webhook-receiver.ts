import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { treeCpuSeconds } from './servers.js';

const RECEIVER = fileURLToPath(new URL('./webhook-receiver.mjs', import.meta.url));
/** Longest the receiver may take to answer a question: it answers in microseconds unless it is gone or stuck. */
const ANSWER_TIMEOUT_MS = 10_000;

/** What the receiver has counted since it started. */
export interface ReceiverStats {
  /** Deliveries answered, a message delivered twice counted twice. */
  received: number;
  /** Deliveries whose Standard Webhooks signature verified with the secret (and whose body had a timestamp). */
  valid: number;
  invalid: number;
  /** Distinct webhook-ids: the messages delivered at least once. */
  distinct: number;
  /** Deliveries of a webhook-id already seen. */
  duplicates: number;
  /** When the latest delivery arrived (ms since the epoch), 0 before the first. */
  lastReceivedAt: number;
  /** Why the first invalid delivery was refused, or null. */
  firstProblem: string | null;
}

/** The receiver of `--webhook` (bench/webhook-receiver.mjs), a child process: see there for what it does. */
export interface BenchReceiver {
  url: string;
  /** The subscription's signing secret, which every delivery must verify with; before any delivery. */
  useSecret(secret: string): Promise<void>;
  stats(): Promise<ReceiverStats>;
  /** CPU time (user + system, from /proc) the receiver has used so far, in seconds. */
  cpuSeconds(): number;
  /**
   * Lag percentiles (ms, from the plant's commit to its message's first arrival) of the messages
   * committed at or after `committedFrom` (ms since the epoch), of which `expected` were created:
   * null for a percentile that falls among those not delivered yet.
   */
  lagPercentiles(committedFrom: number, expected: number, percentiles: number[]): Promise<{ delivered: number; values: (number | null)[] }>;
  close(): Promise<void>;
}

/** `cpu`: the core to pin the receiver to with taskset, when the caller found taskset and two cores. */
export async function startReceiver(cpu: number | undefined): Promise<BenchReceiver> {
  const command = [process.execPath, RECEIVER];
  const pinned = cpu !== undefined ? ['taskset', '-c', String(cpu), ...command] : command;
  // taskset execs node in its own place, so the IPC channel's descriptor and variable reach it.
  const child = spawn(pinned[0]!, pinned.slice(1), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await listeningPort(child);
  const ask = questioner(child);
  return {
    url: `http://127.0.0.1:${port}/plants-created`,
    useSecret: async (secret) => {
      await ask({ type: 'secret', secret });
    },
    stats: () => ask<ReceiverStats>({ type: 'stats' }),
    // taskset execs node in its own place: the child's pid is the receiver's.
    cpuSeconds: () => treeCpuSeconds(child.pid!),
    lagPercentiles: (committedFrom, expected, percentiles) => ask({ type: 'lag', committedFrom, expected, percentiles }),
    close: async () => {
      // It exits when the channel closes; a kill, should it not within a few seconds.
      if (child.connected) child.disconnect();
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

function listeningPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the webhook receiver did not start listening within 10 s'));
    }, 10_000);
    child.once('exit', (code) => reject(new Error(`the webhook receiver exited with ${code} before listening`)));
    child.once('message', (message: { type: string; port: number }) => {
      clearTimeout(timer);
      resolve(message.port);
    });
  });
}

/** Questions over the IPC channel, each answered by a message with the same id and the answer. */
function questioner(child: ChildProcess): <Answer>(question: Record<string, unknown>) => Promise<Answer> {
  let lastId = 0;
  const waiting = new Map<number, (answer: unknown) => void>();
  child.on('message', (message: { id?: number; answer?: unknown }) => {
    if (message.id === undefined) return;
    waiting.get(message.id)?.(message.answer);
    waiting.delete(message.id);
  });
  return <Answer>(question: Record<string, unknown>) =>
    new Promise<Answer>((resolve, reject) => {
      if (!child.connected) {
        reject(new Error('the webhook receiver has gone'));
        return;
      }
      const id = ++lastId;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`the webhook receiver did not answer ${String(question['type'])} within ${ANSWER_TIMEOUT_MS} ms`));
      }, ANSWER_TIMEOUT_MS);
      waiting.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer as Answer);
      });
      child.send({ ...question, id });
    });
}
