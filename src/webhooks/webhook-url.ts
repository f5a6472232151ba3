/** Why `text` cannot be a subscription's URL, or undefined: credentials are refused, as they would sit in the store and every listing. */
export function webhookUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `an http:// or https:// URL, not ${url.protocol}//`;
  if (url.username !== '' || url.password !== '') return 'a URL without credentials (user:password@): receivers check the signature instead';
  return undefined;
}
