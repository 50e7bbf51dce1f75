import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toPanelHit } from '../../../../src/vscode/model/panelHits';
import { decodeHits, encodeHits } from '../../../../src/shared/protocol';

test('an engine hit crosses the panel protocol with its values intact', () => {
  const hit = {
    host: 'local',
    probe: 'add_ints',
    event: 'add_ints',
    kind: 'return' as const,
    pid: 10,
    tid: 11,
    comm: 'calls',
    cpu: 1,
    ts: 12.5,
    args: { a: 3, s: 'x y', p: '0x7ffd', gone: null, arr: [1, 2] },
    retval: -4,
  };
  const ph = toPanelHit(hit);
  assert.deepEqual(decodeHits(encodeHits([ph])), [
    {
      host: 'local',
      probe: 'add_ints',
      kind: 'return',
      pid: 10,
      tid: 11,
      comm: 'calls',
      cpu: 1,
      ts: 12.5,
      args: { a: 3, s: 'x y', p: '0x7ffd', gone: 'null', arr: '[1,2]' },
      retval: -4,
    },
  ]);
  assert.equal('event' in ph, false, 'the tracefs event name stays on the host side');
});
