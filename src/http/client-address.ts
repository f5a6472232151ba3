import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';

/**
 * The client's address as Fastify's `request.ip` gives it, for the requests
 * served without Fastify: the peer's address, or with TRUST_PROXY the
 * nearest address in X-Forwarded-For that no trusted proxy added. Made with
 * the same library and the same list as Fastify's `trustProxy`, so both
 * ways of serving name a client alike.
 */
export function clientAddress(trustProxy: readonly string[] | undefined): (request: IncomingMessage) => string | undefined {
  if (trustProxy === undefined) return (request) => request.socket.remoteAddress;
  const trusted = proxyAddr.compile([...trustProxy]);
  return (request) => {
    const addresses = proxyAddr.all(request, trusted);
    return addresses[addresses.length - 1];
  };
}

/**
 * Whether a peer is one of the proxies of TRUST_PROXY, judged as Fastify
 * judges the last hop: such a peer carries many clients' connections.
 */
export function trustedPeer(trustProxy: readonly string[] | undefined): (address: string) => boolean {
  if (trustProxy === undefined) return () => false;
  const trusted = proxyAddr.compile([...trustProxy]);
  return (address) => trusted(address, 0);
}
