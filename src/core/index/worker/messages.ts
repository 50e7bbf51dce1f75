// Requests and responses between runWorkerJob() and the index worker.
// Tests: test/unit/core/index/worker/client.test.ts, test/unit/core/index/worker/pool.test.ts
import type { DwarfSlice, UnitSlice } from '../fromDwarf';
import type { IndexData } from '../model';

/** An index build's answer when the index went to the cache (WorkerRequest `cacheKey`) rather than back by copy. */
export interface IndexStored {
  stored: true;
}

export type WorkerRequest =
  | { kind: 'ping'; text: string }
  | { kind: 'heapLimit' }
  | {
      kind: 'index';
      path: string;
      debugDirs?: string[];
      workers?: number;
      onlyFile?: string;
      memoryLimitMb?: number;
      /** The index cache's directory: unchanged units' shares are read from (and new ones written to) its unit cache. */
      unitCacheDir?: string;
      /**
       * Store the whole index in the index cache under this key (in `cacheDir`, else the default directory) and
       * answer `{ stored: true }` instead of the index: the caller opens the entry, as a cached load does.
       */
      cacheKey?: string;
      cacheDir?: string;
    }
  | {
      kind: 'slice';
      path: string;
      debugDirs?: string[];
      debugFile?: string;
      noSystemDebugDir?: boolean;
      part: number;
      parts: number;
    }
  | {
      kind: 'units';
      path: string;
      debugDirs?: string[];
      debugFile?: string;
      noSystemDebugDir?: boolean;
      /** Offsets of the units to index, each into a slice of its own (dwarfUnitSlices). */
      unitOffsets: number[];
    };

export type WorkerResponse =
  | { kind: 'ping'; result: string }
  | { kind: 'heapLimit'; result: number }
  | { kind: 'index'; result: IndexData | IndexStored }
  | { kind: 'slice'; result: DwarfSlice }
  | { kind: 'units'; result: UnitSlice[] };
