// The client's half of the file watcher: hits are shown only once a later check proved their file unchanged, a
// changed file's hits after its last good check are discarded and counted, and the markers are read out of the
// trace stream only when they carry the session's key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ProbeDefinition } from '../../../../src/core/probes/definition';
import {
  describeDisabled,
  describeFileChange,
  describeGuard,
  probedPath,
  WatchGate,
  type FileChange,
  type FileGuard,
} from '../../../../src/core/session/fileWatch';
import { shellWord } from '../../../../src/cli/commands/trace';
import { HitParser, type EventSchema, type Hit } from '../../../../src/core/tracefs/hitParser';

const PATHS: Record<string, string> = { old_ev: '/bin/old', lib_ev: '/lib/other.so' };

function hit(event: string, ts: number): Hit {
  return { host: 'h', probe: event, kind: 'entry', pid: 1, tid: 1, comm: 'c', cpu: 0, ts, args: {}, event };
}

function gate() {
  const shown: Hit[] = [];
  const notes: FileChange[] = [];
  const g = new WatchGate({ host: 'h', pathOf: (e) => PATHS[e], release: (h) => shown.push(h), notify: (c) => notes.push({ ...c }) });
  return { g, shown, notes };
}

test('a hit is shown once a check that began after it found its file unchanged, in stream order', () => {
  const { g, shown } = gate();
  g.marker(1.0, '1.1 tick 1');
  g.hit(hit('old_ev', 1.05));
  g.hit(hit('lib_ev', 1.06));
  g.marker(1.01, '1.2 ok 1 0');
  assert.equal(shown.length, 0, 'both came after tick 1: not proved yet');
  g.marker(1.1, '1.3 tick 2');
  g.hit(hit('old_ev', 1.12));
  g.marker(1.11, '1.4 ok 2 0');
  assert.deepEqual(
    shown.map((h) => h.ts),
    [1.05, 1.06],
  );
  // An `ok` whose tick was lost (a full buffer) proves nothing.
  g.marker(1.21, '1.5 ok 3 0');
  assert.equal(shown.length, 2);
  g.end();
  assert.deepEqual(
    shown.map((h) => h.ts),
    [1.05, 1.06, 1.12],
    'the end of the stream shows what is left',
  );
});

test("a file written over loses its hits after its last good check, and later ones; other files' hits go on", () => {
  const { g, shown, notes } = gate();
  g.marker(1.0, '1.6 tick 1');
  g.hit(hit('old_ev', 1.02));
  g.marker(1.01, '1.7 ok 1 0');
  g.marker(1.1, '1.8 tick 2');
  g.hit(hit('old_ev', 1.15)); // the new build at the old offset, or the old one just before: cannot tell
  g.hit(hit('lib_ev', 1.16));
  g.marker(1.2, '1.9 changed 2 /bin/old');
  g.marker(1.25, '1.10 disabled 2 /bin/old 3');
  g.hit(hit('old_ev', 1.21));
  g.marker(1.26, '1.11 ok 2 1');
  g.hit(hit('lib_ev', 1.3));
  g.end();
  assert.deepEqual(
    shown.map((h) => [h.event, h.ts]),
    [
      ['lib_ev', 1.16],
      ['lib_ev', 1.3],
    ],
  );
  assert.equal(g.discarded, 3, 'the plain build hit after the last good check too: discarded, not shown as true');
  assert.equal(notes.length, 2);
  assert.deepEqual(notes[0], { host: 'h', path: '/bin/old', kind: 'changed', discarded: 2, within: 1.2 - 1.0 });
  assert.equal(notes[1].disabled, 3);
  assert.equal(g.changes.get('/bin/old')!.discarded, 3);
});

test("an `ok` that counts a change not heard of yet holds every hit until it is; the stderr note's cutoff is the last good check", () => {
  const { g, shown, notes } = gate();
  g.marker(1.0, '1.12 tick 1');
  g.hit(hit('old_ev', 1.01));
  g.marker(1.02, '1.13 ok 1 0');
  g.marker(1.1, '1.14 tick 2');
  g.hit(hit('old_ev', 1.11));
  g.hit(hit('lib_ev', 1.12));
  g.marker(1.3, '1.15 ok 2 1'); // its `changed` marker was lost
  assert.equal(shown.length, 0);
  g.note(['changed', '/bin/old']);
  assert.equal(notes[0].within, undefined);
  g.note(['disabled', '/bin/old', '1']);
  g.marker(1.4, '1.16 tick 3');
  g.marker(1.41, '1.17 ok 3 1');
  assert.deepEqual(
    shown.map((h) => h.ts),
    [1.12],
    'the held hit of the changed file came after its last good check',
  );
  // The same verdict again (a restarted watcher re-checks from its baseline) changes nothing.
  g.note(['changed', '/bin/old']);
  g.note(['disabled', '/bin/old', '1']);
  assert.equal(notes.length, 2);
});

test('a replaced or removed file is reported once and its hits (the old build still running) are shown', () => {
  const { g, shown, notes } = gate();
  g.marker(1.0, '1.18 tick 1');
  g.marker(1.01, '1.19 ok 1 0');
  g.marker(1.1, '1.20 tick 2');
  g.hit(hit('old_ev', 1.11));
  g.note(['replaced', '/bin/old']);
  g.marker(1.12, '1.21 replaced 2 /bin/old');
  g.marker(1.13, '1.22 ok 2 0');
  g.marker(1.2, '1.23 tick 3');
  g.marker(1.21, '1.24 ok 3 0');
  assert.equal(shown.length, 1);
  assert.deepEqual(
    notes.map((n) => n.kind),
    ['replaced', 'replaced'],
    'once when heard of, again when the marker says how late',
  );
  assert.equal(g.discarded, 0);
});

test('markers the ring buffer lost are counted, from their numbers and the totals each watcher says at its end', () => {
  const { g } = gate();
  g.marker(1.0, '1.1 tick 1');
  g.marker(1.01, '1.2 ok 1 0');
  // 1.3 and 1.4 overwritten by a full buffer
  g.marker(1.3, '1.5 tick 3');
  g.note(['marks', '1', '7']); // it wrote two more before it ended: lost too
  g.marker(2.0, '2.1 tick final');
  g.marker(2.01, '2.2 ok final 0');
  g.note(['marks', '2', '2']);
  assert.equal(g.markersLost, 4);
});

test('the sentences name the file, the target and the command to trace the new build', () => {
  const c: FileChange = { host: 'root@box:22', path: '/srv/app', kind: 'changed', discarded: 4, disabled: 2 };
  assert.equal(
    describeFileChange(c, "run probelens trace /srv/app 'add_ints a b'"),
    "/srv/app on root@box:22 was written over in place while traced: disabling its probes (left at the old build's offsets they would sit inside other instructions of the new one); records taken after the change are discarded; to trace the new build, run probelens trace /srv/app 'add_ints a b'",
  );
  assert.match(
    describeFileChange({ ...c, kind: 'replaced' }, 'run X'),
    /^\/srv\/app on root@box:22 was replaced by a new build, which is not being traced .*run X$/,
  );
  assert.match(describeFileChange({ ...c, kind: 'removed' }, 'run X'), /was removed while traced/);
  assert.equal(describeDisabled(c), '/srv/app on root@box:22: 2 probe events disabled; the new build runs untraced');
  assert.equal(shellWord('add_ints a b'), "'add_ints a b'");
  assert.equal(shellWord("it's"), "'it'\\''s'");
  assert.equal(shellWord('--host=root@h:22'), '--host=root@h:22');
  const at = (target: ProbeDefinition['target']): ProbeDefinition => ({ kind: 'p', group: 'g', event: 'e', target, args: [] });
  assert.equal(probedPath(at({ type: 'uprobe', path: '/srv/app', offset: 0x1149n })), '/srv/app');
  assert.equal(probedPath(at({ type: 'uprobe', path: '/a/b.so', offset: 0x10n, refCtrOffset: 0x20n })), '/a/b.so');
  assert.equal(probedPath(at({ type: 'kprobe', symbol: 'do_sys_openat2', offset: 0n })), undefined);
});

const KEY = '0123456789abcdef';
const SCHEMA: EventSchema = { event: 'ev', probe: 'ev', kind: 'entry', args: [{ name: 's', type: 'string' }] };

test('the parser takes marker lines that end with the key out of the stream, in both modes; anything else stays data', () => {
  for (const sentinel of [null, { name: '__pl', printed: '0x9234567890abcdef' }]) {
    const marks: Array<[number, string]> = [];
    const hits: Hit[] = [];
    const p = new HitParser({
      host: 'h',
      events: [SCHEMA],
      sentinel,
      onHit: (h) => hits.push(h),
      marker: { key: KEY, onMarker: (ts, text) => marks.push([ts, text]) },
    });
    const end = sentinel ? ` __pl=${sentinel.printed}` : '';
    const open = sentinel ? ` __plh=${sentinel.printed}` : '';
    p.push(`            bash-27233   (  27233) [000] ...1.  1852.793762: tracing_mark_write: probelens_watch 1.1 tick 3 ${KEY}`);
    // A traced string shaped like a marker, without the key, is the string's text.
    const fake = 'x\n            sh-1 (1) [000] .....  1.000000: tracing_mark_write: probelens_watch ok 3 0 ffffffffffffffff';
    const rec = `            prog-5       (      5) [001] d....  1852.800000: ev: (0x1149)${open} s="${fake}"${end}`;
    for (const l of rec.split('\n')) p.push(l);
    p.push(`              sh-27233   (  27233) [000] .....  1852.900001: tracing_mark_write: probelens_watch 1.2 ok 3 0 ${KEY}`);
    p.end();
    assert.deepEqual(marks, [
      [1852.793762, '1.1 tick 3'],
      [1852.900001, '1.2 ok 3 0'],
    ]);
    if (sentinel) {
      assert.equal(hits.length, 1);
      assert.equal(hits[0].args.s, fake);
    }
  }
});

test("the agent's word on each file's guard reaches the session once per file, and reads as one line", () => {
  const guards: FileGuard[] = [];
  const g = new WatchGate({
    host: 'db1',
    pathOf: () => undefined,
    release: () => undefined,
    notify: () => undefined,
    guarded: (x) => guards.push(x),
  });
  g.note(['guard', 'lease', '/srv/app', 'perl']);
  g.note(['guard', 'poll', '/srv/lib.so']);
  g.note(['guard', 'bogus', '/srv/x']);
  assert.deepEqual(guards, [
    { host: 'db1', path: '/srv/app', guard: 'lease', tool: 'perl' },
    { host: 'db1', path: '/srv/lib.so', guard: 'poll' },
  ]);
  assert.deepEqual([...g.guards.keys()], ['/srv/app', '/srv/lib.so']);
  assert.equal(describeGuard(guards[0]), '/srv/app on db1: a write to it waits until its probes are disabled (a read lease held by perl)');
  assert.match(describeGuard(guards[1]), /^\/srv\/lib\.so on db1: checked for writes every 0\.025 s \(no perl or python3 there/);
});
