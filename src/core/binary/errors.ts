// Every way a binary can fail to load ends in one of these classes, so callers (the index worker, the CLI,
// the editor) can tell "not our kind of file" from "damaged file" from "unsupported machine" and say what
// the user should do next.
// Tests: test/unit/core/binary/elfFile.test.ts, test/unit/core/binary/compressed.test.ts, test/unit/core/binary/debugFile.test.ts,
//   test/unit/core/binary/fuzz.test.ts, test/unit/cli/messages.test.ts

/** The bytes are not an ELF object at all. */
export class NotElfError extends Error {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(
      `${path} is not an ELF executable or shared library (${detail}): point ProbeLens at the compiled binary, not a script or source file`,
    );
    this.name = 'NotElfError';
  }
}

/** An ELF file whose structure is inconsistent: truncated, corrupted or deliberately hostile. */
export class ElfFormatError extends Error {
  constructor(
    /** Where in the file the problem is: a section name, "ELF header", "program header 3"… */
    readonly where: string,
    /** File (or section-relative) offset at which reading failed, when known. */
    readonly offset: number | undefined,
    detail: string,
  ) {
    super(
      `malformed ELF in ${where}${offset === undefined ? '' : ` at offset 0x${offset.toString(16)}`}: ${detail}; rebuild the binary or check that the file was copied completely`,
    );
    this.name = 'ElfFormatError';
  }
}

/** A valid ELF file for a machine ProbeLens cannot probe (uprobe fetchargs are arch-specific). */
export class UnsupportedArchError extends Error {
  constructor(
    readonly machine: string,
    readonly path: string,
  ) {
    super(`${path} is built for ${machine}; ProbeLens probes x86-64 and AArch64 binaries only: build for one of those`);
    this.name = 'UnsupportedArchError';
  }
}

/** An ELF core dump (ET_CORE): the memory of a crashed process, not a program that can be probed. */
export class CoreFileError extends Error {
  constructor(readonly path: string) {
    super(`${path} is a core dump, not a program: point ProbeLens at the executable that crashed (\`file ${path}\` names it)`);
    this.name = 'CoreFileError';
  }
}

/** A separate debug file was found but does not belong to the binary (build-id or CRC differ). */
export class DebugFileMismatchError extends Error {
  constructor(
    readonly debugPath: string,
    readonly binaryPath: string,
    detail: string,
  ) {
    super(`debug file ${debugPath} does not match ${binaryPath} (${detail}): install the debug file from the same build`);
    this.name = 'DebugFileMismatchError';
  }
}

/** True for the typed errors this layer throws on bad input (used by the fuzz test and by callers that degrade). */
export function isBinaryFormatError(e: unknown): e is NotElfError | ElfFormatError | UnsupportedArchError | CoreFileError {
  return e instanceof NotElfError || e instanceof ElfFormatError || e instanceof UnsupportedArchError || e instanceof CoreFileError;
}
