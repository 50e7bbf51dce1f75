// How each real program of the corpus is fetched and built: by its own build system, from Debian's source
// package (or, for Go, from GOROOT), with nothing but the flags a user would pass. test/helpers/corpus.ts runs them.
import { join, resolve } from 'node:path';

export const CORPUS_NAMES = ['redis', 'redis-instrumented', 'postgres', 'ninja', 'gofmt'] as const;
export type CorpusName = (typeof CORPUS_NAMES)[number];

/** Runs a command in the build tree (niced, output to the build log); rejects with the log's tail on failure. */
export type Run = (cmd: string, args: string[], opts?: { cwd?: string; env?: Record<string, string> }) => Promise<void>;

export interface CorpusRecipe {
  /** Debian source package, fetched with `apt-get source`; absent: the sources are GOROOT's. */
  aptSource?: string;
  /** Bumped when the build steps change, so cached trees built the old way are rebuilt. */
  revision: number;
  /** Debian packages the build needs beyond gcc/make (.ci/run installs them; named in errors). */
  aptBuildDeps: string[];
  /** Builds in `dir`, the copy of the source tree that becomes srcDir (in-tree build). */
  build(dir: string, run: Run): Promise<void>;
  /** Binaries and libraries, relative to the built tree (or absolute for out-of-tree outputs). */
  binaries: Record<string, string>;
  /** What this project shows that the others don't (for the README and failure messages). */
  why: string;
}

const REPO = resolve(__dirname, '..', '..');
/** The -finstrument-functions counting runtime (the exact-count oracle); its text is part of the cache key. */
export const COUNT_RUNTIME = join(REPO, 'test', 'corpus', 'runtime', 'count-calls.c');

// Two jobs: the machines have two cores, shared with other work.
const JOBS = '-j2';
const REDIS_MAKE = ['MALLOC=libc'];

export const CORPUS_RECIPES: Record<CorpusName, CorpusRecipe> = {
  redis: {
    aptSource: 'redis',
    revision: 1,
    aptBuildDeps: ['make', 'pkg-config'],
    why: 'C, -O2 -g by its own Makefile (bundled lua and hiredis, libc malloc): .cold splits, .part/.isra/.constprop clones, thousands of inlined copies, same-name statics',
    // The Makefile's defaults (OPTIMIZATION=-O2, DEBUG=-g -ggdb) but MALLOC=libc: Debian's patch adding
    // USE_SYSTEM_JEMALLOC tests `#if USE_SYSTEM_JEMALLOC == yes`, which is true when neither name is defined, so
    // the bundled-jemalloc build no longer links (undefined mallocx); libc malloc also spares the jemalloc build.
    build: (dir, run) => run('make', [JOBS, ...REDIS_MAKE], { cwd: dir }),
    binaries: {
      'redis-server': 'src/redis-server',
      'redis-cli': 'src/redis-cli',
      'redis-benchmark': 'src/redis-benchmark',
    },
  },
  'redis-instrumented': {
    aptSource: 'redis',
    revision: 2,
    aptBuildDeps: ['make', 'pkg-config'],
    why: "redis with -finstrument-functions and a counting runtime: the program's own per-function call counts",
    async build(dir, run) {
      const obj = join(dir, 'probelens-count-calls.o');
      await run('gcc', ['-O2', '-g', '-Wall', '-c', COUNT_RUNTIME, '-o', obj], { cwd: dir });
      // REDIS_CFLAGS/REDIS_LDFLAGS reach redis's own code only (the Makefile's documented hook, used by its
      // `gcov` target), so the bundled lua and hiredis stay uninstrumented. -fipa-cp-clone (on by default only at
      // -O3) lets IPA constant propagation clone redis's own functions (`expireIfNeeded.constprop.0`,
      // `writeToClient.constprop.0`, ...): without it this build has no clone the workload runs, so the clone site
      // kind would go unproven. GCC instruments before IPA, so a clone reports the original function's address.
      const cflags = 'REDIS_CFLAGS=-finstrument-functions -fipa-cp-clone';
      await run('make', [JOBS, ...REDIS_MAKE, cflags, `REDIS_LDFLAGS=${obj}`], { cwd: dir });
    },
    binaries: {
      'redis-server': 'src/redis-server',
      'redis-cli': 'src/redis-cli',
      'redis-benchmark': 'src/redis-benchmark',
    },
  },
  postgres: {
    aptSource: 'postgresql-15',
    revision: 1,
    aptBuildDeps: ['make', 'bison', 'flex', 'libreadline-dev', 'zlib1g-dev', 'pkg-config'],
    why: 'C, ./configure CFLAGS="-g -O2": a large server (many binaries and a shared library), MemoryContextSwitchTo inlined ~1,500 times',
    async build(dir, run) {
      await run('./configure', ['CFLAGS=-g -O2', '--without-icu'], { cwd: dir });
      await run('make', [JOBS], { cwd: dir });
    },
    binaries: {
      postgres: 'src/backend/postgres',
      psql: 'src/bin/psql/psql',
      initdb: 'src/bin/initdb/initdb',
      pg_dump: 'src/bin/pg_dump/pg_dump',
      'libpq.so': 'src/interfaces/libpq/libpq.so.5.15',
    },
  },
  ninja: {
    aptSource: 'ninja-build',
    revision: 1,
    aptBuildDeps: ['python3'],
    why: 'C++ (STL-heavy: templates, namespaces, std:: inlined everywhere, -O2 -g), built by its own configure.py --bootstrap in about a minute on 2 cores',
    // configure.py's release flags are already -g -O2 -DNDEBUG.
    build: (dir, run) => run('python3', ['configure.py', '--bootstrap'], { cwd: dir }),
    binaries: { ninja: 'ninja' },
  },
  gofmt: {
    revision: 1,
    aptBuildDeps: ['golang-go'],
    why: "Go, from Go's own sources in GOROOT (go build cmd/gofmt, GOPROXY=off)",
    build: (dir, run) => run('go', ['build', '-o', join(dir, 'gofmt'), 'cmd/gofmt'], { cwd: dir, env: { GOPROXY: 'off', GOFLAGS: '' } }),
    binaries: { gofmt: 'gofmt' },
  },
};
