// A node:test reporter that prints the time each test file's tests took (the sum of its
// top-level tests), slowest first: where a change to the suite's speed should look.
export default async function* slowestFiles(source) {
  const seconds = new Map();
  for await (const { type, data } of source) {
    if ((type !== 'test:pass' && type !== 'test:fail') || data.nesting !== 0 || data.file === undefined) continue;
    seconds.set(data.file, (seconds.get(data.file) ?? 0) + data.details.duration_ms / 1000);
  }
  const rows = [...seconds].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PLANTSTORE_TEST_SLOWEST ?? 10));
  yield '\nslowest test files (seconds):\n';
  for (const [file, total] of rows) yield `${total.toFixed(1).padStart(7)}  ${file.replace(`${process.cwd()}/`, '')}\n`;
}
