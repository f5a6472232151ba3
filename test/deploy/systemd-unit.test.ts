import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

/** The [Service] section of a unit as systemd reads one-value settings: the last assignment of a key wins. */
function serviceSettings(file: string): Map<string, string> {
  const unit = readFileSync(new URL(`../../deploy/${file}`, import.meta.url), 'utf8');
  const section = unit.split(/^\[/m).find((part) => part.startsWith('Service]'))!;
  const pairs = [...section.matchAll(/^([A-Za-z]+)=(.*)$/gm)].map(([, key, value]) => [key!, value!.trim()] as const);
  return new Map(pairs);
}

for (const file of ['plantstore.service', 'plantstore-deliver.service']) {
  test(`the systemd unit ${file} keeps what the service writes to its own user: UMask=0077, and its data folder made 0700`, () => {
    const service = serviceSettings(file);
    assert.equal(service.get('UMask'), '0077');
    assert.equal(service.get('StateDirectory'), 'plantstore');
    assert.equal(service.get('StateDirectoryMode'), '0700');
    assert.equal(service.get('ReadWritePaths'), '/var/lib/plantstore', 'the state directory is the one folder it writes');
  });
}

test('the deliverer unit runs plantstore deliver with the hardening of the server unit', () => {
  const server = serviceSettings('plantstore.service');
  const deliverer = serviceSettings('plantstore-deliver.service');
  assert.equal(deliverer.get('ExecStart'), '{{INSTALL_DIR}}/bin/plantstore deliver');
  for (const [key, value] of server) if (!['ExecStart', 'Environment'].includes(key)) assert.equal(deliverer.get(key), value, key);
});
