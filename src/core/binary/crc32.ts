// CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320) as used by .gnu_debuglink. zlib.crc32 exists only from
// Node 20.15/22.2, so older runtimes fall back to a table-driven loop.
import * as zlib from 'node:zlib';

let table: Uint32Array | undefined;

function tableCrc32(data: Uint8Array): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const native = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

export function crc32(data: Uint8Array, forceTable = false): number {
  return native && !forceTable ? native(data) >>> 0 : tableCrc32(data);
}
