// Child of bench/index.ts: builds one binary's full index cold and reports time, peak RSS and the size of the
// debug sections it decoded as JSON. argv: BIN [WORKERS] [SRC] [CACHE] (WORKERS absent or 0: the pool sized to the
// machine; SRC: only the units naming that source file, as the editor does for the open file; CACHE: an index cache
// directory whose unit cache the build reads and writes).
import { openBinary } from '../src/core/binary/binaryImage';
import { bytesReadIn, type FileReadMap } from '../src/core/binary/fileBytes';
import { buildIndex } from '../src/core/index/build';
import { indexWorkerCount } from '../src/core/index/worker/pool';

const DEBUG_SECTIONS = [
  '.debug_info',
  '.debug_abbrev',
  '.debug_line',
  '.debug_str',
  '.debug_line_str',
  '.debug_str_offsets',
  '.debug_addr',
  '.debug_loc',
  '.debug_loclists',
  '.debug_ranges',
  '.debug_rnglists',
];

void (async () => {
  const t = process.hrtime.bigint();
  const workers = Number(process.argv[3] ?? 0);
  const onlyFile = process.argv[4] || undefined;
  const unitCacheDir = process.argv[5] || undefined;
  let reused: number | undefined;
  let reads: FileReadMap[] = [];
  const data = await buildIndex(process.argv[2], {
    workers,
    onlyFile,
    unitCacheDir,
    onUnitReuse: (s) => (reused = s.reused),
    onReads: (m) => (reads = m),
  });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  const usage = process.resourceUsage();
  // What the cold build read of the DWARF (decompressed): the sections a goal of "peak RSS ≤ the DWARF" compares with.
  const image = await openBinary(process.argv[2]);
  const dw = image.dwarf();
  let debugBytes = 0;
  for (const n of DEBUG_SECTIONS) debugBytes += dw.section(n)?.length ?? 0;
  // What the build did read of those sections (decompressed: a compressed section read at all was read whole).
  const debugElf = image.debugElf ?? image.elf;
  const map = reads.find((m) => m.path === debugElf.path);
  let debugReadBytes = 0;
  for (const n of DEBUG_SECTIONS) {
    const s = debugElf.section(n) ?? debugElf.section(`.zdebug_${n.slice(7)}`);
    if (!s || !map) continue;
    const got = bytesReadIn(map, s.offset, s.size);
    debugReadBytes += got > 0 && (s.flags & 0x800n || s.name.startsWith('.zdebug_')) ? (dw.section(n)?.length ?? 0) : got;
  }
  const fileReadBytes = reads.reduce((n, m) => n + bytesReadIn(m, 0, m.size), 0);
  process.stdout.write(
    JSON.stringify({
      ms,
      cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000,
      maxRssKb: usage.maxRSS,
      functions: data.functions.length,
      described: data.functions.filter((f) => f.file !== undefined).length,
      onlyFile: data.onlyFile,
      reused,
      rows: data.lines.address.length,
      poolThreads: indexWorkerCount(dw.section('.debug_info')?.length ?? 0),
      debugBytes,
      debugReadBytes,
      fileReadBytes,
    }),
  );
})();
