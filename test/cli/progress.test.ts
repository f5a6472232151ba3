import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { Progress } from '../../src/cli/progress.js';

function capture(isTTY: boolean): { stream: PassThrough & { isTTY?: boolean }; text: () => string } {
  const stream = Object.assign(new PassThrough(), { isTTY });
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

test('on a terminal, progress is one bar redrawn in place', () => {
  const { stream, text } = capture(true);
  const progress = new Progress(stream, 'copy: plants', 200n);
  progress.update(50n);
  progress.update(200n, true);
  assert.equal(
    text(),
    `\rcopy: plants [${'#'.repeat(8)}${' '.repeat(22)}] 25% 50/200\rcopy: plants [${'#'.repeat(30)}] 100% 200/200\n`,
  );
});

test('elsewhere, progress is plain lines, at most one a second, and always the last', () => {
  const { stream, text } = capture(false);
  const progress = new Progress(stream, 'copy: plants', 200n);
  progress.update(50n);
  progress.update(100n);
  progress.update(200n, true);
  assert.equal(text(), 'copy: plants: 50/200 (25%)\ncopy: plants: 200/200 (100%)\n');
});

test('elsewhere, the final line is not written again when the last line already said it', () => {
  const { stream, text } = capture(false);
  const progress = new Progress(stream, 'copy: plants', 10n);
  progress.update(10n);
  progress.update(10n, true);
  assert.equal(text(), 'copy: plants: 10/10 (100%)\n');
});

test('without a total, progress is the count alone, as a bar or as plain lines', () => {
  const terminal = capture(true);
  const onTerminal = new Progress(terminal.stream, 'plants import (bytes)', undefined);
  onTerminal.update(50n);
  onTerminal.update(200n, true);
  assert.equal(terminal.text(), '\rplants import (bytes) 50\rplants import (bytes) 200\n');
  const log = capture(false);
  const inLog = new Progress(log.stream, 'plants import (bytes)', undefined);
  inLog.update(50n);
  inLog.update(100n);
  inLog.update(200n, true);
  assert.equal(log.text(), 'plants import (bytes): 50\nplants import (bytes): 200\n');
});
