/** One server's bar pair: its throughput and the CPU time a request cost it. */
export interface PictureBar {
  name: string;
  requestsPerSecond: number;
  cpuUsPerRequest: number;
}

const WIDTH = 820;
const BAR_HEIGHT = 30;
const LABEL_WIDTH = 230;
const VALUE_WIDTH = 190;
const COLOURS: Record<string, string> = { baseline: '#9e9e9e', 'durable floor': '#4a7bb7', service: '#d9822b' };

/**
 * The benchmark's result as an SVG picture: two panels of horizontal bars,
 * req/s (longer is better) and CPU µs a request (shorter is better), one bar
 * per server, each panel scaled to its largest value, so that the gap between
 * the floor and the service shows without reading a table. Plain SVG with no
 * script or external reference, so that it renders wherever the report does.
 */
export function reportPicture({ title, bars }: { title: string; bars: readonly PictureBar[] }): string {
  const panels = [
    panel('req/s (higher is better)', bars, (bar) => bar.requestsPerSecond, (value) => Math.round(value).toLocaleString('en')),
    panel('CPU µs per request (lower is better)', bars, (bar) => bar.cpuUsPerRequest, (value) => `${value.toFixed(1)} µs`),
  ];
  // Each panel: its heading, then a bar and a gap for every server (four with --webhook), then space.
  const panelHeight = 36 + bars.length * (BAR_HEIGHT + 8);
  const height = 48 + panels.length * panelHeight;
  const body = panels.map((content, i) => `<g transform="translate(0 ${48 + i * panelHeight})">${content}</g>`).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="10" y="24" font-size="15" font-weight="bold">${escape(title)}</text>
${body}
</svg>
`;
}

function panel(heading: string, bars: readonly PictureBar[], value: (bar: PictureBar) => number, show: (value: number) => string): string {
  const largest = Math.max(...bars.map(value).filter(Number.isFinite), 1e-9);
  // The service's distance to the floor, the ratio its goals are set in, written beside its bar.
  const floor = bars.find((bar) => bar.name === 'durable floor');
  const againstFloor = (bar: PictureBar) =>
    bar.name === 'service' && floor !== undefined && Number.isFinite(value(bar) / value(floor)) ? ` (${(value(bar) / value(floor)).toFixed(2)} × floor)` : '';
  const room = WIDTH - LABEL_WIDTH - VALUE_WIDTH - 20;
  const rows = bars.map((bar, i) => {
    const y = 14 + i * (BAR_HEIGHT + 8);
    const v = value(bar);
    const length = Number.isFinite(v) ? Math.max(1, (v / largest) * room) : 0;
    return [
      `<text x="10" y="${y + BAR_HEIGHT / 2 + 5}">${escape(bar.name)}</text>`,
      `<rect x="${LABEL_WIDTH}" y="${y}" width="${length.toFixed(1)}" height="${BAR_HEIGHT}" fill="${COLOURS[bar.name] ?? '#777777'}"/>`,
      `<text x="${(LABEL_WIDTH + length + 6).toFixed(1)}" y="${y + BAR_HEIGHT / 2 + 5}">${escape(Number.isFinite(v) ? show(v) + againstFloor(bar) : 'n/a')}</text>`,
    ].join('');
  });
  return `<text x="10" y="6" font-weight="bold">${escape(heading)}</text>\n${rows.join('\n')}`;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
