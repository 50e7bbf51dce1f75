// What each editor was last given per decoration type, so a redraw that would hand it the same decorations again
// is skipped. The live timer redraws every refreshMs while counts move, after the hits' own redraws have already
// drawn them: an identical setDecorations still costs the page a message, a new decoration of the line and a frame
// of it, on the same main thread that draws the next count. No `vscode` import: editors are keys by identity
// (an editor shown again is a new object, whose decorations are drawn afresh).
// Tests: test/unit/vscode/model/redrawMemo.test.ts

export class RedrawMemo {
  private readonly last = new WeakMap<object, Map<string, string>>();

  /**
   * True when `drawn` (the decorations as text) differs from what `editor` was last given for `type`, or its document
   * was edited since (`version`: the editor moved the decorations with the text, a redraw puts them back on their
   * lines, as every redraw did before); remembers it.
   */
  changed(editor: object, type: string, drawn: string, version: number): boolean {
    let byType = this.last.get(editor);
    if (!byType) this.last.set(editor, (byType = new Map()));
    const now = `${version}\0${drawn}`;
    if (byType.get(type) === now) return false;
    byType.set(type, now);
    return true;
  }
}
