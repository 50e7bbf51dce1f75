// A switch's `default: unreachable(x, …)` compiles only when every member of the union has its case, and a value
// outside the type that arrives anyway is an error naming it, not a silent fall-through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unreachable } from '../../../src/shared/unreachable';

type Shape = { kind: 'circle'; r: number } | { kind: 'square'; side: number };

function area(s: Shape): number {
  switch (s.kind) {
    case 'circle':
      return Math.PI * s.r * s.r;
    case 'square':
      return s.side * s.side;
    default:
      return unreachable(s, 'shape');
  }
}

function forgetful(s: Shape): number {
  switch (s.kind) {
    case 'circle':
      return s.r;
    default:
      // @ts-expect-error a square has no case, so `s` is not `never` here: typecheck fails if this compiles
      return unreachable(s, 'shape');
  }
}

test('every case handled: the switch answers; a value outside the type throws naming it', () => {
  assert.equal(area({ kind: 'square', side: 3 }), 9);
  assert.throws(() => area({ kind: 'hexagon' } as unknown as Shape), /^Error: unexpected shape: \{"kind":"hexagon"\}$/);
  assert.throws(() => forgetful({ kind: 'square', side: 2 }), /unexpected shape/);
});
