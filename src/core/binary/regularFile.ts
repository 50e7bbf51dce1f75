// Opening the files ProbeLens reads (binaries, debug files, cache entries) only when they are regular files.
// open(2) of a FIFO for reading blocks until a writer appears, a device may do anything on open, and a
// directory or a symbolic-link loop only gives a raw EISDIR / ELOOP later: so every open here is
// O_NONBLOCK | O_NOCTTY (a FIFO opens at once, a terminal never becomes ours), and fstat on the opened
// descriptor decides, so a file swapped between a check and the open is still caught.
// Tests: test/unit/cli/files.test.ts, test/unit/core/binary/elfFile.test.ts
import { closeSync, constants, fstatSync, openSync, statSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

const LOOP = 'a symbolic link loop';
const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** What a path names when it is not a regular file, in words. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** The path is not a regular file (or is a symbolic-link loop): ProbeLens reads only regular files. */
export class NotRegularFileError extends Error {
  constructor(
    readonly path: string,
    /** "a directory", "a FIFO (named pipe)", "a symbolic link loop"… */
    readonly kind: string,
  ) {
    super(
      kind === 'a directory'
        ? `${path} is a directory, not a file: point ProbeLens at the compiled binary inside it`
        : kind === LOOP
          ? `${path} is a symbolic link loop that never reaches a file: fix the link, or point ProbeLens at the compiled binary itself`
          : `${path} is ${kind}, not a regular file: ProbeLens reads only regular files; point it at the compiled binary itself`,
    );
    this.name = 'NotRegularFileError';
  }
}

function loopError(path: string, e: unknown): never {
  if ((e as NodeJS.ErrnoException)?.code === 'ELOOP') throw new NotRegularFileError(path, LOOP);
  if ((e as NodeJS.ErrnoException)?.code === 'EISDIR') throw new NotRegularFileError(path, 'a directory');
  throw e;
}

/**
 * Throws NotRegularFileError unless `path` (symbolic links followed) is a regular file; other fs errors
 * (ENOENT, EACCES) are thrown as they are. Never opens the file.
 */
export function requireRegularFile(path: string): Stats {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    loopError(path, e);
  }
  if (!st.isFile()) throw new NotRegularFileError(path, kindOf(st));
  return st;
}

/** A descriptor on `path`, opened without blocking; throws NotRegularFileError unless it is a regular file. */
export function openRegularFileSync(path: string, extraFlags = 0): number {
  let fd: number;
  try {
    fd = openSync(path, FLAGS | extraFlags);
  } catch (e) {
    loopError(path, e);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new NotRegularFileError(path, kindOf(st));
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** The async form of openRegularFileSync. */
export async function openRegularFile(path: string): Promise<FileHandle> {
  let fh: FileHandle;
  try {
    fh = await open(path, FLAGS);
  } catch (e) {
    loopError(path, e);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new NotRegularFileError(path, kindOf(st as Stats));
    return fh;
  } catch (e) {
    await fh.close();
    throw e;
  }
}

/** The whole contents of a regular file (see openRegularFile). */
export async function readRegularFile(path: string): Promise<Buffer> {
  const fh = await openRegularFile(path);
  try {
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}
