/**
 * What a terminal acts on instead of showing: C0 controls with newline and tab (a newline could fake a line of output),
 * DEL, C1 controls (some terminals take U+009B for `ESC [`), and the bidi overrides and isolates, which reorder the line.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** The same without C0: JSON.stringify escapes those, and writes its own newlines between members. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Text someone else wrote (a receiver's answer, a name), each unsafe character shown as an escape (`\n`, `\x1b`, `\u202e`): seen, not obeyed. */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, (character) => {
    const named = NAMED[character];
    if (named !== undefined) return named;
    const code = character.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** JSON made safe for a terminal, parsing to the same value: the DEL, C1 and bidi characters JSON.stringify leaves raw (only ever in strings) become `\u` escapes. */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
