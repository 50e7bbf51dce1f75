// ELF notes as the index reads them: the GNU build-id a target's binary is checked against before arming, Go's
// build id, and SystemTap (USDT) notes, in 4- and 8-aligned note sections, little- and big-endian.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NT_GNU_BUILD_ID, NT_GO_BUILDID, parseNotes } from '../../../../src/core/binary/notes';

/** One note: namesz, descsz, type, then name (NUL-terminated) and desc, each ending padded to `align` from the note's start. */
function note(owner: string, type: number, desc: number[], align = 4, littleEndian = true): Buffer {
  const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((align - (b.length % align)) % align)]);
  const name = Buffer.from(`${owner}\0`, 'latin1');
  const head = Buffer.alloc(12);
  const put = (v: number, at: number) => (littleEndian ? head.writeUInt32LE(v, at) : head.writeUInt32BE(v, at));
  put(name.length, 0);
  put(desc.length, 4);
  put(type, 8);
  return pad(Buffer.concat([pad(Buffer.concat([head, name])), Buffer.from(desc)]));
}

const buildId = [0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

test('a GNU build-id and a Go build id in one 4-aligned section', () => {
  const bytes = Buffer.concat([note('GNU', NT_GNU_BUILD_ID, buildId), note('Go', NT_GO_BUILDID, [0x61, 0x62, 0x63])]);
  const notes = parseNotes(bytes, true, 4, '.note', 0x300);
  assert.deepEqual(
    notes.map((n) => [n.owner, n.type, Buffer.from(n.desc).toString('hex')]),
    [
      ['GNU', 3, 'deadbeef0102030405060708090a0b0c0d0e0f10'],
      ['Go', 4, '616263'],
    ],
  );
  assert.equal(notes[0].descOffset, 16, 'the descriptor starts after the 12-byte header and "GNU\\0"');
  assert.equal(notes[1].descOffset, 12 + 4 + 20 + 12 + 4);
});

test('8-aligned notes (.note.gnu.property) pad name and descriptor to 8; big-endian headers read as such', () => {
  const eight = Buffer.concat([note('GNU', 5, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 8), note('GNU', 3, [0xaa], 8)]);
  const notes = parseNotes(eight, true, 8, '.note.gnu.property', 0);
  assert.deepEqual(
    notes.map((n) => [n.type, n.desc.length, n.descOffset]),
    [
      [5, 12, 16],
      [3, 1, 32 + 16],
    ],
  );
  const big = parseNotes(note('stapsdt', 3, [9, 9], 4, false), false, 4, '.note.stapsdt', 0);
  assert.deepEqual(
    big.map((n) => [n.owner, n.type, [...n.desc]]),
    [['stapsdt', 3, [9, 9]]],
  );
});

test('a note whose descriptor runs past the section is an error naming the section, not a short read', () => {
  const cut = note('GNU', 3, buildId).subarray(0, 30);
  assert.throws(() => parseNotes(cut, true, 4, '.note.gnu.build-id', 0x2c4), /\.note\.gnu\.build-id/);
  // Trailing bytes too short for a header are ignored.
  assert.equal(parseNotes(Buffer.concat([note('GNU', 3, [1]), Buffer.alloc(8)]), true, 4, '.note', 0).length, 1);
});
