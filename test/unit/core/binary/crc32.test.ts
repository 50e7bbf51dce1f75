// The .gnu_debuglink checksum: a separate debug file is accepted only when its CRC-32 matches the one the
// binary names, so both ways of computing it must give the standard value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from '../../../../src/core/binary/crc32';

const bytes = (s: string) => new Uint8Array(Buffer.from(s, 'latin1'));

test('the standard check value and known strings, with zlib and with the table fallback', () => {
  for (const forceTable of [false, true]) {
    // CRC-32/ISO-HDLC check value: crc32("123456789").
    assert.equal(crc32(bytes('123456789'), forceTable), 0xcbf43926);
    assert.equal(crc32(bytes(''), forceTable), 0);
    assert.equal(crc32(bytes('The quick brown fox jumps over the lazy dog'), forceTable), 0x414fa339);
  }
});

test('the fallback agrees with zlib on every byte value, and the result is an unsigned 32-bit number', () => {
  const all = Uint8Array.from({ length: 4096 }, (_, i) => (i * 131 + (i >> 8)) & 0xff);
  const table = crc32(all, true);
  assert.equal(crc32(all), table);
  assert.ok(table >= 0 && table <= 0xffffffff && Number.isInteger(table));
  // One flipped bit changes the sum: a corrupted debug file is not mistaken for the right one.
  const flipped = all.slice();
  flipped[1000] ^= 1;
  assert.notEqual(crc32(flipped, true), table);
});
