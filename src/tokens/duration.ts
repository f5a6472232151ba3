const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** `90s`, `15m`, `12h`, `30d`, `2w` in milliseconds; undefined when the text is not such a duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,9})([smhdw])$/.exec(text.trim());
  if (match === null) return undefined;
  const milliseconds = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return milliseconds > 0 ? milliseconds : undefined;
}

export function parseGrace(text: string): number | undefined {
  return /^0+[smhdw]?$/.test(text.trim()) ? 0 : parseDuration(text);
}
