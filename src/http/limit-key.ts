import { isIP } from 'node:net';

/** IPv6 by its /64: the least a subscriber is handed (RFC 6177), within which its hosts pick addresses at will (RFC 8981). */
export function limitKey(address: string): string {
  // A zone (`fe80::1%eth0`) names the local interface, not the client.
  const bare = address.split('%', 1)[0]!;
  if (isIP(bare) !== 6) return address;
  const groups = ipv6Groups(bare);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

function ipv6Groups(address: string): number[] {
  let text = address;
  const tail: number[] = [];
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, dotted.index);
    // `::ffff:1.2.3.4` leaves `::ffff:`, whose last colon only led to the IPv4 part; `::1.2.3.4` leaves `::`.
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head = '', rest] = text.split('::');
  const before = head === '' ? [] : head.split(':');
  const after = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = rest === undefined ? [] : Array<string>(8 - tail.length - before.length - after.length).fill('0');
  return [...[...before, ...zeros, ...after].map((group) => Number.parseInt(group, 16)), ...tail];
}
