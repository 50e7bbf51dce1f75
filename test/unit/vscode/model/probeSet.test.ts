import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addProbe,
  aggregatedSpecs,
  binaryFromKey,
  binaryKey,
  changedBinaries,
  emptyProbeSet,
  enabledSpecs,
  parseProbeSet,
  ProbeSetFormatError,
  removeProbe,
  serializeProbeSet,
  setProbeAggregate,
  setProbeEnabled,
  streamedEntries,
} from '../../../../src/vscode/model/probeSet';
import { plainData } from '../../../helpers/plain';

test('a probe set survives serialise → parse unchanged, disabled probes included', () => {
  const set = emptyProbeSet();
  assert.equal(addProbe(set, 'build/calls', 'add_ints $params'), true);
  addProbe(set, 'build/calls', 'greet%return $retval');
  addProbe(set, '/opt/lib/libx.so', 'x_init');
  setProbeEnabled(set, 'build/calls', 'greet%return $retval', false);
  const text = serializeProbeSet(set);
  assert.deepEqual(plainData(parseProbeSet(text)), plainData(set));
  // Reviewable: enabled probes are plain strings.
  assert.match(text, /"add_ints \$params"/);
  assert.deepEqual(plainData(enabledSpecs(parseProbeSet(text), 'build/calls')), ['add_ints $params']);
});

test('adding twice does not duplicate; removing the last probe drops the binary', () => {
  const set = emptyProbeSet();
  addProbe(set, 'a', 's');
  assert.equal(addProbe(set, 'a', 's'), false);
  assert.equal(set.binaries.a.length, 1);
  assert.equal(removeProbe(set, 'a', 's'), true);
  assert.deepEqual(plainData(set.binaries), {});
  assert.equal(removeProbe(set, 'a', 's'), false);
});

test('hand-edited files: comment lines tolerated, bad shapes named', () => {
  const set = parseProbeSet('// my probes\n{"version":1,"binaries":{"b":["f", {"spec":"g","enabled":false}]}}');
  assert.deepEqual(plainData(set.binaries.b), [
    { spec: 'f', enabled: true },
    { spec: 'g', enabled: false },
  ]);
  assert.throws(
    () => parseProbeSet('{"binaries":{"b":[3]}}', 'x.json'),
    (e: unknown) => e instanceof ProbeSetFormatError && /x\.json: "binaries"\."b"\[0\]/.test(e.message),
  );
  assert.throws(() => parseProbeSet('{"version":7}'), /version 7 is not supported/);
  assert.throws(() => parseProbeSet('nope'), /not valid JSON/);
});

test('binaries inside the workspace are stored relative, others absolute', () => {
  assert.equal(binaryKey('/w/build/app', '/w'), 'build/app');
  assert.equal(binaryKey('/x/app', '/w'), '/x/app');
  assert.equal(binaryFromKey('build/app', '/w'), '/w/build/app');
  assert.equal(binaryFromKey('/x/app', '/w'), '/x/app');
});

test('a probe counted in the kernel is written {"spec", "aggregate": true} and read back; streamed ones stay strings', () => {
  const set = emptyProbeSet();
  addProbe(set, 'build/calls', 'add_ints $params');
  addProbe(set, 'build/calls', 'hot');
  addProbe(set, 'build/calls', 'off');
  assert.equal(setProbeAggregate(set, 'build/calls', 'hot', true), true);
  assert.equal(setProbeAggregate(set, 'build/calls', 'hot', true), false);
  setProbeAggregate(set, 'build/calls', 'off', true);
  setProbeEnabled(set, 'build/calls', 'off', false);
  const text = serializeProbeSet(set);
  assert.deepEqual(plainData(JSON.parse(text).binaries['build/calls']), [
    'add_ints $params',
    { spec: 'hot', aggregate: true },
    { spec: 'off', enabled: false, aggregate: true },
  ]);
  assert.deepEqual(plainData(parseProbeSet(text)), plainData(set));
  // A target with hist triggers: the streaming session carries the others, each enabled aggregated spec its own.
  assert.deepEqual(plainData(streamedEntries(set, 'build/calls', true).map((e) => e.spec)), ['add_ints $params']);
  assert.deepEqual(plainData(aggregatedSpecs(set, 'build/calls', true)), ['hot']);
  // One without: everything streams.
  assert.deepEqual(plainData(streamedEntries(set, 'build/calls', false).map((e) => e.spec)), ['add_ints $params', 'hot', 'off']);
  assert.deepEqual(plainData(aggregatedSpecs(set, 'build/calls', false)), []);
  // Flipping back streams it and writes a plain string again.
  setProbeAggregate(set, 'build/calls', 'hot', false);
  assert.deepEqual(plainData(JSON.parse(serializeProbeSet(set)).binaries['build/calls'][1]), 'hot');
});

test('a hand edit that only flips "aggregate" changes that binary; a non-boolean "aggregate" is named', () => {
  const a = parseProbeSet('{"binaries":{"b":["f"],"c":["g"]}}');
  const b = parseProbeSet('{"binaries":{"b":[{"spec":"f","aggregate":true}],"c":["g"]}}');
  assert.deepEqual(plainData(changedBinaries(a, b)), ['b']);
  assert.throws(
    () => parseProbeSet('{"binaries":{"b":[{"spec":"f","aggregate":"yes"}]}}', 'x.json'),
    /x\.json: "binaries"\."b"\[0\]\."aggregate" must be true or false/,
  );
});
