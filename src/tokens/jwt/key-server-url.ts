/**
 * What is wrong with the URL of an issuer or a key set, or undefined when
 * nothing is. It must be https, except on loopback (127.0.0.0/8, ::1,
 * localhost), where tests and sidecars serve plain HTTP: keys fetched over
 * plain HTTP from another machine could be anyone's.
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

/** Whether a URL's hostname (IPv6 in brackets, as `URL` gives it) is this machine's loopback interface. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}
