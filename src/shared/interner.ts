// The one string table builder: each distinct string gets the next id, in first-seen order, and `strings` lists
// them by id. The index cache, the line-table merge, the panel's hit batches and the panel's history all build
// their string tables with it. Side-effect free and free of Node and VS Code imports: the webview imports it too.
export class Interner {
  /** The strings, by id. */
  readonly strings: string[];
  private readonly ids = new Map<string, number>();

  /** Starts from an existing table: `strings[i]` keeps id `i` (a repeated string keeps its first id). */
  constructor(strings: readonly string[] = []) {
    this.strings = [];
    for (const s of strings) {
      if (!this.ids.has(s)) this.ids.set(s, this.strings.length);
      this.strings.push(s);
    }
  }

  /** The id of `s`, adding it at the end of the table when it is new. */
  id(s: string): number {
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.strings.length;
      this.strings.push(s);
      this.ids.set(s, id);
    }
    return id;
  }

  /** The id of `s` if the table holds it, without adding it. */
  find(s: string): number | undefined {
    return this.ids.get(s);
  }

  /** How many ids have been given out. */
  get size(): number {
    return this.strings.length;
  }
}
