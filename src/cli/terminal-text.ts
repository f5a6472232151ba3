/**
 * Characters a terminal acts on instead of showing: C0 controls, newline and
 * tab included (inside a field a newline could fake a line of output), DEL,
 * C1 controls (some terminals take U+009B for `ESC [`), and the bidi
 * overrides and isolates, which reorder the rest of the line.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** The usual names of the commonest ones, which read better than their codes. */
const NAMED: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** The same without C0: JSON.stringify escapes those, and writes its own newlines between members. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text that someone else wrote (a receiver's answer, a description, a name),
 * made safe to print on a terminal: each unsafe character shown as an escape,
 * `\n`, `\x1b`, `\x9b`, `\u202e`, so it is seen rather than obeyed.
 */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, (character) => {
    const named = NAMED[character];
    if (named !== undefined) return named;
    const code = character.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * JSON text made safe to print on a terminal, parsing to the same value:
 * JSON.stringify leaves DEL, C1 controls and bidi characters raw, so they
 * become `\u` escapes, which they can only be inside a string.
 */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
