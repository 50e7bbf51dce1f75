import { test } from 'node:test';
import assert from 'node:assert/strict';
import { placeArguments, type AbiType } from '../../../../src/core/fetchargs/abi';

const int = (size = 8): AbiType => ({ kind: 'int', size });
const fetches = (conv: Parameters<typeof placeArguments>[0], types: AbiType[]) =>
  placeArguments(conv, types).map((p) => (p.ok ? p.parts.map((x) => x.fetch).join(',') : `!${p.reason.split(' ')[0]}`));

test('x86-64 System V: six integer registers, then the stack above the return address', () => {
  assert.deepEqual(fetches('sysv', [int(4), int(4), int(8), int(8), int(2), int(1), int(4), int(8)]), [
    '%di',
    '%si',
    '%dx',
    '%cx',
    '%r8',
    '%r9',
    '+8(%sp)',
    '+16(%sp)',
  ]);
});

test('x86-64 System V: floats use SSE registers without consuming integer ones; small structs split into eightbytes', () => {
  const small: AbiType = { kind: 'aggregate', size: 16, eightbytes: ['int', 'int'] };
  const big: AbiType = { kind: 'aggregate', size: 24, eightbytes: ['int', 'int', 'int'] };
  assert.deepEqual(fetches('sysv', [{ kind: 'float', size: 8 }, int(), small, big, int()]), [
    '!floating-point',
    '%di',
    '%si,%dx',
    '+8(%sp),+16(%sp),+24(%sp)',
    '%cx',
  ]);
  // A struct that no longer fits in the remaining registers goes to memory whole, and later ints still get registers.
  assert.deepEqual(fetches('sysv', [int(), int(), int(), int(), int(), small, int()]), [
    '%di',
    '%si',
    '%dx',
    '%cx',
    '%r8',
    '+8(%sp),+16(%sp)',
    '%r9',
  ]);
});

test('hidden return pointer takes %di', () => {
  const p = placeArguments('sysv', [int()], { hasHiddenReturnPointer: true });
  assert.equal(p[0].ok && p[0].parts[0].fetch, '%si');
});

test('AArch64: x0-x7, large structs by reference, stack from sp', () => {
  const big: AbiType = { kind: 'aggregate', size: 32, eightbytes: ['int', 'int', 'int', 'int'] };
  const r = placeArguments('aapcs64', [int(), big, int(), int(), int(), int(), int(), int(), int()]);
  assert.deepEqual(
    r.map((p) => (p.ok ? p.parts.map((x) => x.fetch).join(',') : '!')),
    ['%x0', '%x1', '%x2', '%x3', '%x4', '%x5', '%x6', '%x7', '+0(%sp)'],
  );
  assert.equal(r[1].ok && r[1].byReference, true);
});

test('Go ABIInternal: strings take two registers, overflow goes to the stack whole', () => {
  const s: AbiType = { kind: 'go-string' };
  assert.deepEqual(fetches('go-regabi', [s, int(), { kind: 'go-slice' }, s, s]), [
    '%ax,%bx',
    '%cx',
    '%di,%si,%r8',
    '%r9,%r10',
    '+8(%sp),+16(%sp)',
  ]);
});

test('Go stack ABI: everything on the stack in order', () => {
  assert.deepEqual(fetches('go-stack', [int(), { kind: 'go-string' }, int(4)]), ['+8(%sp)', '+16(%sp),+24(%sp)', '+32(%sp)']);
});
