import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFilter, type HitFields } from '../../../src/shared/hitFilter';
import { formatArgs } from '../../../src/shared/hitText';

const hit = (over: Partial<HitFields> = {}): HitFields => ({
  probe: 'parse_request',
  host: 'web1.example',
  comm: 'nginx',
  kind: 'entry',
  pid: 4242,
  tid: 4243,
  argText: 'len=512 path=/index.html',
  retText: '',
  site: '',
  siteKind: '',
  ...over,
});

test('an empty or blank filter matches everything', () => {
  assert.equal(parseFilter('').empty, true);
  assert.equal(parseFilter('   ').matches(hit()), true);
});

test('free words must all occur, case-insensitively, across probe, host, comm, args and retval', () => {
  assert.equal(parseFilter('INDEX.html').matches(hit()), true);
  assert.equal(parseFilter('nginx 512').matches(hit()), true);
  assert.equal(parseFilter('nginx 513').matches(hit()), false);
  assert.equal(parseFilter('-22').matches(hit({ retText: '-22' })), true);
  assert.equal(parseFilter('web1').matches(hit()), true);
});

test('field tokens narrow to one field', () => {
  assert.equal(parseFilter('probe:parse').matches(hit()), true);
  assert.equal(parseFilter('probe:nginx').matches(hit()), false, 'comm text does not satisfy probe:');
  assert.equal(parseFilter('host:WEB1').matches(hit()), true);
  assert.equal(parseFilter('host:web2').matches(hit()), false);
  assert.equal(parseFilter('comm:ngi').matches(hit()), true);
  assert.equal(parseFilter('pid:4242').matches(hit()), true);
  assert.equal(parseFilter('pid:424').matches(hit()), false, 'ids match exactly');
  assert.equal(parseFilter('tid:4243 kind:entry').matches(hit()), true);
  assert.equal(parseFilter('kind:return').matches(hit()), false);
});

test('unknown prefixes and a bare "probe:" are plain words', () => {
  assert.equal(parseFilter('path=/index').matches(hit()), true);
  assert.equal(parseFilter('len:512').matches(hit()), false);
  assert.equal(parseFilter('probe:').matches(hit({ argText: 'x=probe:' })), true);
});

test('formatArgs writes name=value pairs from a flat value list at an offset', () => {
  assert.equal(formatArgs(['a', 'b'], [9, 9, 3, -7], 2), 'a=3 b=-7');
  assert.equal(formatArgs([], [1]), '');
});

test('site:ADDR picks the hits of one site exactly; site:KIND those of a kind', () => {
  const inl = hit({ site: '0x4011a0', siteKind: 'inlined' });
  assert.equal(parseFilter('site:0x4011A0').matches(inl), true);
  assert.equal(parseFilter('site:0x4011').matches(inl), false, 'an address prefix is another site');
  assert.equal(parseFilter('site:inlined').matches(inl), true);
  assert.equal(parseFilter('site:entry').matches(inl), false);
  assert.equal(parseFilter('site:0x4011a0').matches(hit()), false, 'a hit that names no site');
  assert.equal(parseFilter('probe:parse site:0x4011a0').matches(inl), true);
});
