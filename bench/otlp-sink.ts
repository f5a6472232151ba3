import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const SINK = fileURLToPath(new URL('./otlp-sink.mjs', import.meta.url));

/** A traced build's receiver (bench/otlp-sink.mjs), pinned to `cpu` when given: its endpoint, and how to stop it. */
export async function startOtlpSink(cpu: number | undefined): Promise<{ endpoint: string; close(): Promise<void> }> {
  const command = cpu === undefined ? [process.execPath, SINK] : ['taskset', '-c', String(cpu), process.execPath, SINK];
  const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const [port] = (await Promise.race([
    once(child.stdout!, 'data'),
    new Promise((_, reject) => setTimeout(() => reject(new Error('the OTLP sink did not start within 10 s')), 10_000).unref()),
  ])) as [Buffer];
  return {
    endpoint: `http://127.0.0.1:${String(port).trim()}`,
    close: async () => {
      const exited = once(child, 'exit');
      child.kill();
      await exited;
    },
  };
}

/** What a traced build is given: traces on, every request sampled, exported to `endpoint`. */
export function tracedSettings(endpoint: string, ratio?: string): Record<string, string> {
  if (ratio !== undefined) {
    return { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: ratio };
  }
  return { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_on' };
}
