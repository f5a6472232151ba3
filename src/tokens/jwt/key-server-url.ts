/**
 * https, except on loopback, where tests and sidecars serve plain HTTP: keys fetched over plain HTTP from another
 * machine could be anyone's.
 */
export function keyServerUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'an https:// URL';
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    return 'an https:// URL (http:// only on loopback: 127.0.0.0/8, ::1, localhost)';
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    return 'a URL without credentials, query or fragment';
  }
  return undefined;
}

/** `URL` gives an IPv6 hostname in brackets. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}
