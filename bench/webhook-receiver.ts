import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The receiver of `--webhook`: answers every delivery 204 at once and counts them; it does not verify (the tests do). */
export interface BenchReceiver {
  url: string;
  /** Deliveries received so far. */
  received(): number;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<BenchReceiver> {
  let received = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received += 1;
      response.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/plants-created`,
    received: () => received,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
