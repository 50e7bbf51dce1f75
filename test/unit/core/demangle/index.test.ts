import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { demangle, withoutRustHash } from '../../../../src/core/demangle';

test('C++ names demangle as c++filt does', () => {
  const names = ['_ZN6shapes6Circle4areaEv', '_ZNK6shapes6Circle4areaEv', '_ZN2ns3fooEPKci'];
  const oracle = execFileSync('c++filt', names, { encoding: 'utf8' }).trim().split('\n');
  assert.deepEqual(names.map(demangle), oracle);
  // Template instances come without the return type c++filt prints ("int maxOf<int>(int, int)").
  assert.equal(demangle('_Z5maxOfIiET_S0_S0_'), 'maxOf<int>(int, int)');
});

test('Rust legacy and v0 names demangle; non-mangled names pass through', () => {
  assert.equal(withoutRustHash(demangle('_ZN4main7compute17h0123456789abcdefE')), 'main::compute');
  assert.equal(demangle('_RNvCs1234_7mycrate3foo'), 'mycrate::foo');
  assert.equal(demangle('main'), 'main');
  assert.equal(demangle('_Znot_really'), '_Znot_really');
});
