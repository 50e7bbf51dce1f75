import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RedrawMemo } from '../../../../src/vscode/model/redrawMemo';

test('the same decorations again are not handed to the editor; changed ones, another type or another editor are', () => {
  const memo = new RedrawMemo();
  const editor = {};
  assert.equal(memo.changed(editor, 'armed', '12\0● 5 hits', 1), true, 'first drawing');
  assert.equal(memo.changed(editor, 'armed', '12\0● 5 hits', 1), false, "the live timer's redraw of the same count");
  assert.equal(memo.changed(editor, 'armed', '12\0● 6 hits', 1), true, 'a new count');
  assert.equal(memo.changed(editor, 'other', '', 1), true, "the other type's first (empty) drawing");
  assert.equal(memo.changed(editor, 'other', '', 1), false);
  assert.equal(memo.changed(editor, 'armed', '12\0● 6 hits', 1), false, 'types are remembered apart');
  assert.equal(memo.changed({}, 'armed', '12\0● 6 hits', 1), true, 'an editor shown again (a new object) is drawn afresh');
  // The editor moves decorations with an edit: the same counts are put back on their lines once.
  assert.equal(memo.changed(editor, 'armed', '12\0● 6 hits', 2), true, 'the document was edited');
  assert.equal(memo.changed(editor, 'armed', '12\0● 6 hits', 2), false);
});
