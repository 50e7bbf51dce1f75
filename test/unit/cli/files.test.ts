// Only regular files are opened: a FIFO, socket, character or block device, directory or symbolic-link loop
// given as the binary is refused at once with one ProbeLens sentence (every command, with and without the
// cache), and one found as a cache entry (or a link to one) is ignored and rebuilt. Before, a FIFO blocked in
// open(2) forever. The timeouts only decide how long a real hang takes to report; each run prints its time.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import { buildC, CALLS_C, have } from '../core/binary/build';
import { missing } from '../../helpers/require';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const CHILD = resolve(__dirname, 'files-child.ts');
const HANG_MS = 120_000;
const dir = mkdtempSync(join(tmpdir(), 'probelens-files-'));
const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  out: string;
  err: string;
}

/** Runs node with args; resolves with what it printed, or fails the test when it does not end (a hang). */
function runNode(t: TestContext, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const t0 = Date.now();
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, XDG_CACHE_HOME: join(dir, 'xdg'), ...env },
    });
    let out = '',
      err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error(`${args.slice(1).join(' ')} did not end within ${HANG_MS} ms (a hang)`));
    }, HANG_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      t.diagnostic(`${args[0] === CHILD ? 'loadIndex' : 'probelens'} ${args.slice(1).join(' ').slice(0, 120)}: ${Date.now() - t0} ms`);
      res({ code, out, err });
    });
  });
}

async function listen(path: string): Promise<void> {
  const s = createServer();
  servers.push(s);
  await new Promise<void>((res) => s.listen(path, res));
}

/** One of each kind of path that is not a regular file, by the words the refusal uses. */
async function specials(t: TestContext): Promise<Map<string, string> | undefined> {
  if (!have('mkfifo')) {
    missing(t, 'mkfifo (coreutils)');
    return undefined;
  }
  const base = mkdtempSync(join(dir, 'specials-'));
  const m = new Map<string, string>();
  spawnSync('mkfifo', [join(base, 'fifo')]);
  m.set('a FIFO (named pipe)', join(base, 'fifo'));
  await listen(join(base, 'sock'));
  m.set('a socket', join(base, 'sock'));
  m.set('a character device', '/dev/null');
  // A block device node of our own (the loop driver's major; nothing is opened through it).
  if (process.getuid?.() === 0 && spawnSync('mknod', [join(base, 'blk'), 'b', '7', '250']).status === 0)
    m.set('a block device', join(base, 'blk'));
  else missing(t, 'root and mknod (to make a block device node)');
  mkdirSync(join(base, 'dir'));
  m.set('a directory', join(base, 'dir'));
  symlinkSync(join(base, 'loop-b'), join(base, 'loop-a'));
  symlinkSync(join(base, 'loop-a'), join(base, 'loop-b'));
  m.set('a symbolic link loop', join(base, 'loop-a'));
  return m;
}

/** The one sentence each kind is refused with. */
function refusal(kind: string, path: string): string {
  if (kind === 'a directory') return `${path} is a directory, not a file: point ProbeLens at the compiled binary inside it`;
  if (kind === 'a symbolic link loop')
    return `${path} is a symbolic link loop that never reaches a file: fix the link, or point ProbeLens at the compiled binary itself`;
  return `${path} is ${kind}, not a regular file: ProbeLens reads only regular files; point it at the compiled binary itself`;
}

interface ChildResult {
  ok: boolean;
  name?: string;
  message?: string;
  fromCache?: boolean;
}

async function loadInChild(t: TestContext, cases: Array<Record<string, unknown>>): Promise<ChildResult[]> {
  const r = await runNode(t, [CHILD, JSON.stringify(cases)]);
  assert.equal(r.code, 0, r.err);
  return r.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as ChildResult);
}

test('loadIndex refuses every kind of non-regular binary at once, with and without the cache, in a worker or not', async (t) => {
  const m = await specials(t);
  if (!m) return;
  const cases = [...m].flatMap(([, path]) => [
    { path, noCache: false, cacheDir: join(dir, 'cache-a') },
    { path, noCache: true, inWorker: true },
  ]);
  const results = await loadInChild(t, cases);
  assert.equal(results.length, cases.length);
  let i = 0;
  for (const [kind, path] of m) {
    for (let k = 0; k < 2; k++, i++) {
      assert.equal(results[i].ok, false, `${kind}: refused`);
      assert.equal(results[i].name, 'NotRegularFileError', `${kind}: ${results[i].message}`);
      assert.equal(results[i].message, refusal(kind, path));
    }
  }
});

test('every CLI command given a FIFO (and the other kinds) prints the one sentence and exits 1', async (t) => {
  const m = await specials(t);
  if (!m) return;
  const fifo = m.get('a FIFO (named pipe)')!;
  const runs: Array<[string[], string]> = [
    [['functions', fifo], fifo],
    [['functions', fifo, '--no-cache'], fifo],
    [['lines', fifo, 'calls.c:5'], fifo],
    [['vars', fifo, 'deposit'], fifo],
    [['usdt', fifo], fifo],
    [['define', fifo, 'deposit amount'], fifo],
    [['trace', fifo, 'deposit amount', '--duration', '1'], fifo],
  ];
  for (const [kind, path] of m) if (kind !== 'a FIFO (named pipe)') runs.push([['functions', path], path]);
  const kinds = new Map([...m].map(([k, p]) => [p, k]));
  for (const [args, path] of runs) {
    const r = await runNode(t, [MAIN, ...args]);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.err}`);
    assert.equal(r.out, '');
    assert.equal(r.err, `probelens: ${refusal(kinds.get(path)!, path)}\n`, args.join(' '));
  }
});

test('a cache entry that is a FIFO, a link to one, a socket, a directory or a link loop is ignored and rebuilt', async (t) => {
  if (!have('gcc')) return missing(t, 'gcc (builds the binary)');
  const m = await specials(t);
  if (!m) return;
  const bin = buildC('files-calls', CALLS_C, ['-g', '-O0']);
  const cacheDir = join(dir, 'cache-entries');
  const first = await loadInChild(t, [{ path: bin, cacheDir }]);
  assert.deepEqual(
    first.map((r) => [r.ok, r.fromCache]),
    [[true, false]],
  );
  const [entry] = readdirSync(cacheDir).filter((f) => f.endsWith('.idx'));
  assert.ok(entry, 'an entry was written');
  const path = join(cacheDir, entry);
  const put: Record<string, () => void> = {
    'a FIFO': () => spawnSync('mkfifo', [path]),
    'a link to a FIFO': () => symlinkSync(m.get('a FIFO (named pipe)')!, path),
    'a link to a socket': () => symlinkSync(m.get('a socket')!, path),
    'a link loop': () => symlinkSync(m.get('a symbolic link loop')!, path),
    'a link to a device': () => symlinkSync('/dev/zero', path),
  };
  for (const [what, make] of Object.entries(put)) {
    rmSync(path, { force: true });
    make();
    const [r] = await loadInChild(t, [{ path: bin, cacheDir }]);
    assert.deepEqual([r.ok, r.fromCache], [true, false], `${what}: rebuilt (${r.message ?? ''})`);
    assert.ok(lstatSync(path).isFile(), `${what}: replaced by a regular entry`);
    const [again] = await loadInChild(t, [{ path: bin, cacheDir }]);
    assert.deepEqual([again.ok, again.fromCache], [true, true], `${what}: the rebuilt entry is used`);
  }
  // A directory in the entry's place cannot be renamed over: the index is still built, every time.
  rmSync(path, { force: true });
  mkdirSync(path);
  const [r] = await loadInChild(t, [{ path: bin, cacheDir }]);
  assert.deepEqual([r.ok, r.fromCache], [true, false], `a directory: built (${r.message ?? ''})`);
});
