import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';

/** Not among the errors the exporter retries: once tracing stops, an export fails at once rather than backing off. */
const STOPPED = 'ERR_PLANTSTORE_TRACING_STOPPED';

/** Unref'd sockets, cut and refused once `stop` is called: an export to a hung receiver, or in a retry's back-off, never holds a stopping process up. */
export class ExportConnections {
  #stopped = false;
  readonly #agents: http.Agent[] = [];

  readonly agentFactory = (protocol: string): http.Agent => {
    const connections = this;
    const Base = protocol === 'https:' ? https.Agent : http.Agent;
    const agent = new (class extends Base {
      override createConnection(options: http.ClientRequestArgs, callback?: (error: Error | null, socket: Duplex) => void): Duplex | null | undefined {
        if (connections.#stopped) {
          callback?.(Object.assign(new Error('tracing has stopped'), { code: STOPPED }), undefined as unknown as Duplex);
          return undefined;
        }
        const socket = super.createConnection(options, callback);
        (socket as { unref?: () => void } | null | undefined)?.unref?.();
        return socket;
      }
    })({ keepAlive: true });
    this.#agents.push(agent);
    return agent;
  };

  stop(): void {
    this.#stopped = true;
    for (const agent of this.#agents) agent.destroy();
  }
}
