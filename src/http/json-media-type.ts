/** `application/json`, and a named charset must be UTF-8 (RFC 8259, section 8.1). */
export function mediaTypeProblem(header: string | undefined): string | undefined {
  if (header === 'application/json') return undefined;
  if (header === undefined) return 'the request has no Content-Type';
  const [type = '', ...parameters] = header.split(';');
  if (type.trim().toLowerCase() !== 'application/json') return `got ${JSON.stringify(type.trim())}`;
  for (const parameter of parameters) {
    const [name = '', value = ''] = parameter.split('=', 2);
    const charset = value.trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    if (name.trim().toLowerCase() === 'charset' && charset !== 'utf-8' && charset !== 'utf8') {
      return `charset ${JSON.stringify(charset)} is not UTF-8`;
    }
  }
  return undefined;
}
