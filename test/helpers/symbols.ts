// A function symbol for tests that need symbol tables by hand: 16 bytes, global, in section 1 of .symtab.
import type { FunctionSymbol } from '../../src/core/binary/symbols';

export const funcSymbol = (name: string, address: bigint): FunctionSymbol => ({
  name,
  address,
  size: 16n,
  binding: 'global',
  kind: 'func',
  sectionIndex: 1,
  table: '.symtab',
});
