/** The members of a JWK that only a private or secret key has (RFC 7518, section 6). */
const SECRET_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

/** A JWK Set (RFC 7517, section 5) holding private or secret material means the issuer published what it must keep. */
export function keySetProblem(document: unknown): string | undefined {
  if (typeof document !== 'object' || document === null || !Array.isArray((document as { keys?: unknown }).keys)) {
    return 'a JSON object with a "keys" array';
  }
  for (const [index, key] of ((document as { keys: unknown[] }).keys).entries()) {
    if (typeof key !== 'object' || key === null || typeof (key as { kty?: unknown }).kty !== 'string') {
      return `key ${index} must be an object with a "kty"`;
    }
    const secret = SECRET_MEMBERS.find((member) => member in key);
    if (secret !== undefined) return `key ${index} holds private or secret material ("${secret}"); publish public keys only`;
  }
  return undefined;
}
