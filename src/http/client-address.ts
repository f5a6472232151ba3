import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';

/** Fastify's `request.ip`, with the same library and TRUST_PROXY list, so requests served without Fastify name a client alike. */
export function clientAddress(trustProxy: readonly string[] | undefined): (request: IncomingMessage) => string | undefined {
  if (trustProxy === undefined) return (request) => request.socket.remoteAddress;
  const trusted = proxyAddr.compile([...trustProxy]);
  return (request) => {
    const addresses = proxyAddr.all(request, trusted);
    return addresses[addresses.length - 1];
  };
}

/** Judged as Fastify judges the last hop. */
export function trustedPeer(trustProxy: readonly string[] | undefined): (address: string) => boolean {
  if (trustProxy === undefined) return () => false;
  const trusted = proxyAddr.compile([...trustProxy]);
  return (address) => trusted(address, 0);
}
