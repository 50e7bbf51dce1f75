// Debug information from a debuginfod server: a stripped binary's DWARF fetched by its GNU build-id from the servers
// DEBUGINFOD_URLS names (the standard variable: URLs separated by spaces), tried in turn, into a debug root of our
// own under the XDG cache, laid out as /usr/lib/debug is (`.build-id/ab/cdef….debug`), so every later open finds it
// by build-id without the server. A file lands by rename only once its build-id is checked: never a half file, never
// another build's.
// Tests: test/integration/debuginfod.test.ts
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ElfFile } from './elfFile';

/** Our debug root: `${XDG_CACHE_HOME:-~/.cache}/probelens/debuginfod`. */
export function debuginfodRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'probelens', 'debuginfod');
}

/** The servers to ask, from DEBUGINFOD_URLS (or `urls`): http(s) URLs only. */
export function debuginfodUrls(value: string | undefined = process.env.DEBUGINFOD_URLS): string[] {
  return (value ?? '')
    .split(/\s+/)
    .filter((u) => /^https?:\/\/\S+$/.test(u))
    .map((u) => u.replace(/\/+$/, ''));
}

/** Where the debug file of `buildId` lies in `root`. */
export const cachedDebugFile = (root: string, buildId: string): string =>
  join(root, '.build-id', buildId.slice(0, 2), `${buildId.slice(2)}.debug`);

export class DebuginfodError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DebuginfodError';
  }
}

export interface FetchProgress {
  url: string;
  bytes: number;
  /** From Content-Length, when the server sent one. */
  total?: number;
}

/**
 * Fetches the debug file of `buildId` from the first of `urls` that has it into `root`; returns its path. Throws
 * DebuginfodError naming each server's answer when none gave a file of that build with DWARF.
 */
export async function fetchDebugFile(
  buildId: string,
  urls: readonly string[],
  root: string,
  onProgress?: (p: FetchProgress) => void,
  timeoutMs = 30_000,
): Promise<string> {
  if (!/^[0-9a-f]{4,128}$/.test(buildId)) throw new DebuginfodError(`'${buildId}' is not a build-id`);
  const dest = cachedDebugFile(root, buildId);
  if (
    await stat(dest).then(
      (s) => s.isFile(),
      () => false,
    )
  )
    return dest;
  const why: string[] = [];
  for (const base of urls) {
    const url = `${base}/buildid/${buildId}/debuginfo`;
    const tmp = `${dest}.${process.pid}.${Date.now()}.part`;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
      if (!res.ok || !res.body) {
        why.push(`${base}: HTTP ${res.status}${res.status === 404 ? ' (it has no debug file of this build)' : ''}`);
        continue;
      }
      const total = Number(res.headers.get('content-length')) || undefined;
      await mkdir(dirname(dest), { recursive: true });
      let bytes = 0;
      const body = Readable.fromWeb(res.body as Parameters<typeof Readable.fromWeb>[0]);
      body.on('data', (c: Buffer) => {
        bytes += c.length;
        onProgress?.({ url: base, bytes, total });
      });
      await pipeline(body, createWriteStream(tmp, { mode: 0o644 }));
      const elf = ElfFile.open(tmp);
      try {
        if (elf.buildId !== buildId) {
          why.push(`${base}: served a file of build ${elf.buildId ?? 'none'}`);
          continue;
        }
        if (!elf.hasDebugInfo) {
          why.push(`${base}: served a file without DWARF`);
          continue;
        }
      } finally {
        elf.close();
      }
      await rename(tmp, dest);
      return dest;
    } catch (e) {
      const err = e as Error & { cause?: { code?: string; message?: string } };
      why.push(`${base}: ${err.cause?.code ?? err.cause?.message ?? err.message}`);
    } finally {
      await rm(tmp, { force: true });
    }
  }
  throw new DebuginfodError(`debuginfod has no debug file of build ${buildId}: ${why.join('; ') || 'no server named'}`);
}
