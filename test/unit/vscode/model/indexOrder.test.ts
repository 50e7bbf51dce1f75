// The order in which the editor indexes a binary: the open file's units first, the whole binary behind them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IndexOrder } from '../../../../src/vscode/model/indexOrder';

interface Ix {
  name: string;
  whole: boolean;
}

/** A promise settled by the test. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const tick = () => new Promise((r) => setImmediate(r));

/** Fake builds that record what was started, in order; the test settles them. */
function harness() {
  const started: string[] = [];
  const fileBuilds = new Map<string, ReturnType<typeof deferred<Ix>>>();
  let wholeBuild: ReturnType<typeof deferred<Ix>> | undefined;
  let ready: Ix | undefined;
  let failed = false;
  const order = new IndexOrder<Ix>({
    ready: () => ready,
    started: () => wholeBuild !== undefined || failed,
    whole: () => {
      if (!wholeBuild) {
        started.push('whole');
        wholeBuild = deferred<Ix>();
        wholeBuild.promise.then(
          (ix) => (ready = ix),
          () => (failed = true),
        );
      }
      return wholeBuild.promise;
    },
    forFile: (_binary, file) => {
      started.push(`file ${file}`);
      const d = deferred<Ix>();
      fileBuilds.set(file, d);
      return d.promise;
    },
    isWhole: (ix) => ix.whole,
    adopt: (_binary, ix) => {
      started.push(`adopt ${ix.name}`);
      ready = ix;
    },
  });
  return {
    order,
    started,
    file: (f: string) => fileBuilds.get(f)!,
    whole: () => wholeBuild!,
  };
}

const WHOLE: Ix = { name: 'whole', whole: true };

test('cold: the open file is indexed first and answers its lenses; the whole index starts only after it, then answers everything', async () => {
  const h = harness();
  assert.equal(h.order.stage('bin'), 'idle');
  const first = h.order.forFile('bin', 'object.c');
  await tick();
  assert.deepEqual(h.started, ['file object.c'], 'nothing competes with the open file’s build');
  assert.equal(h.order.stage('bin'), 'indexing');
  h.file('object.c').resolve({ name: 'object.c', whole: false });
  assert.deepEqual(await first, { name: 'object.c', whole: false });
  await tick();
  assert.deepEqual(h.started, ['file object.c', 'whole'], 'the whole index builds behind it');
  assert.equal(h.order.stage('bin'), 'open-file-ready');
  // Asked again before the whole index is ready: the same file index, no second build.
  assert.deepEqual(await h.order.forFile('bin', 'object.c'), { name: 'object.c', whole: false });
  h.whole().resolve(WHOLE);
  await tick();
  assert.equal(h.order.stage('bin'), 'ready');
  assert.equal(await h.order.forFile('bin', 'object.c'), WHOLE);
  assert.equal(await h.order.forFile('bin', 'debug.c'), WHOLE, 'a file opened after: the whole index, no build of its own');
  assert.deepEqual(h.started, ['file object.c', 'whole']);
});

test('a second file opened while the whole index builds is indexed on its own too, and the whole build is not started twice', async () => {
  const h = harness();
  const first = h.order.forFile('bin', 'object.c');
  h.file('object.c').resolve({ name: 'object.c', whole: false });
  await first;
  await tick();
  const second = h.order.forFile('bin', 'debug.c');
  await tick();
  assert.deepEqual(h.started, ['file object.c', 'whole', 'file debug.c']);
  h.file('debug.c').resolve({ name: 'debug.c', whole: false });
  assert.deepEqual(await second, { name: 'debug.c', whole: false });
  h.whole().resolve(WHOLE);
  await tick();
  assert.equal(await h.order.forFile('bin', 'debug.c'), WHOLE);
});

test('when the whole index lands before the second file’s own, that file gets the whole index', async () => {
  const h = harness();
  const first = h.order.forFile('bin', 'object.c');
  h.file('object.c').resolve({ name: 'object.c', whole: false });
  await first;
  await tick();
  const second = h.order.forFile('bin', 'debug.c');
  h.whole().resolve(WHOLE);
  assert.equal(await second, WHOLE);
});

test('a file load that returns the whole index (the cache, or units that refer to each other) is adopted: no second whole build', async () => {
  const h = harness();
  const first = h.order.forFile('bin', 'object.c');
  h.file('object.c').resolve(WHOLE);
  assert.equal(await first, WHOLE);
  await tick();
  assert.deepEqual(h.started, ['file object.c', 'adopt whole']);
  assert.equal(h.order.stage('bin'), 'ready');
});

test('a failed file load falls back to the whole index; a failed whole build leaves the file index answering', async () => {
  const h = harness();
  const first = h.order.forFile('bin', 'object.c');
  h.file('object.c').reject(new Error('no memory'));
  await tick();
  assert.deepEqual(h.started, ['file object.c', 'whole']);
  h.whole().resolve(WHOLE);
  assert.equal(await first, WHOLE);

  const g = harness();
  const a = g.order.forFile('bin', 'object.c');
  g.file('object.c').resolve({ name: 'object.c', whole: false });
  await a;
  await tick();
  const b = g.order.forFile('bin', 'debug.c');
  g.whole().reject(new Error('time limit'));
  g.file('debug.c').resolve({ name: 'debug.c', whole: false });
  assert.deepEqual(await b, { name: 'debug.c', whole: false });
});

test('drop() forgets the file indexes (the binary changed): the next request builds again', async () => {
  const h = harness();
  const first = h.order.forFile('bin', 'object.c');
  h.file('object.c').resolve({ name: 'object.c', whole: false });
  await first;
  await tick();
  h.order.drop('bin');
  assert.equal(h.order.stage('bin'), 'indexing', 'the whole build is still under way');
  void h.order.forFile('bin', 'object.c');
  await tick();
  assert.deepEqual(h.started, ['file object.c', 'whole', 'file object.c']);
});

test('waiting for use: the whole build starts once the open file’s lenses are computed, or after the wait at most', async () => {
  for (const how of ['used', 'timeout'] as const) {
    const started: string[] = [];
    let wholeStarted = false;
    const file = deferred<Ix>();
    const order = new IndexOrder<Ix>({
      ready: () => undefined,
      started: () => wholeStarted,
      whole: () => {
        wholeStarted = true;
        started.push('whole');
        return new Promise<Ix>(() => undefined);
      },
      forFile: () => {
        started.push('file');
        return file.promise;
      },
      isWhole: (ix) => ix.whole,
      adopt: () => undefined,
      waitForUseMs: () => (how === 'used' ? 60_000 : 20),
    });
    const first = order.forFile('bin', 'object.c');
    file.resolve({ name: 'object.c', whole: false });
    await first;
    await tick();
    assert.deepEqual(started, ['file'], `${how}: the whole build waits`);
    if (how === 'used') order.use('bin');
    else await new Promise((r) => setTimeout(r, 60));
    assert.deepEqual(started, ['file', 'whole'], how);
    order.use('bin');
    assert.deepEqual(started, ['file', 'whole'], `${how}: started once`);
  }
});
