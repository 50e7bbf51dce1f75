// The order in which a binary's index is built for the editor. A source file's lenses need only the units that
// name it, so a cold binary is first indexed for the open file (a small build, or the cached whole index if there
// is one), and the whole index is built behind it; another file opened before the whole index is ready is indexed
// the same way. Once the whole index is ready it answers every file. Anything that needs the rest of the binary
// (compiling a spec, which names functions of every unit) asks for the whole index and waits for it. Pure: the
// builds are given (src/vscode/binaries.ts passes loadIndex in a worker).

export interface IndexOrderDeps<I> {
  /** The whole index, when it is ready. */
  ready(binary: string): I | undefined;
  /** Whether the whole build has been started (or has finished, or failed). */
  started(binary: string): boolean;
  /** Starts (or joins) the whole build. */
  whole(binary: string): Promise<I>;
  /** Loads the index for one source file: the cached whole index if there is one, else only the units naming it. */
  forFile(binary: string, file: string): Promise<I>;
  /** Whether an index is the whole binary's (from the cache, or because the file's units refer to others). */
  isWhole(index: I): boolean;
  /** A whole index that a file load returned: it is the binary's whole index from now on. */
  adopt(binary: string, index: I): void;
  /** A file load finished and stage() says so. */
  loaded?(binary: string, file: string, index: I): void;
  /**
   * When set (the editor draws lenses), the whole build waits after a file's own index until use() says its
   * lenses were computed, or this many milliseconds at most: on a busy machine drawing them comes first.
   */
  waitForUseMs?(): number | undefined;
}

/** What the editor can say about a binary's index. */
export type IndexStage = 'idle' | 'indexing' | 'open-file-ready' | 'ready';

export class IndexOrder<I> {
  /** Per binary, per file: the file's own index (undefined when its load failed). */
  private readonly files = new Map<string, Map<string, Promise<I | undefined>>>();
  private readonly fileReady = new Set<string>();
  /** Whole builds waiting for a file's lenses: what starts them early. */
  private readonly waiting = new Map<string, () => void>();

  constructor(private readonly deps: IndexOrderDeps<I>) {}

  /**
   * The index that answers `file`'s lenses soonest: the whole index when ready; else whichever comes first of
   * the file's own index and the whole one. The first call for a binary starts the whole build once the file's
   * load has settled, so the two do not compete for the machine.
   */
  forFile(binary: string, file: string): Promise<I> {
    const ready = this.deps.ready(binary);
    if (ready !== undefined) {
      this.drop(binary);
      return Promise.resolve(ready);
    }
    let perFile = this.files.get(binary);
    if (!perFile) this.files.set(binary, (perFile = new Map()));
    let own = perFile.get(file);
    if (!own) {
      own = this.deps.forFile(binary, file).then(
        (ix) => {
          if (this.deps.isWhole(ix)) {
            if (this.deps.ready(binary) === undefined) this.deps.adopt(binary, ix);
          } else if (this.files.get(binary)?.get(file) === own) this.fileReady.add(binary);
          this.deps.loaded?.(binary, file, ix);
          return ix;
        },
        () => undefined,
      );
      perFile.set(file, own);
      // The whole index builds behind the first file's (once its lenses are computed, when waiting for that).
      void own.then((ix) => this.behind(binary, ix !== undefined));
    }
    const viaFile = own.then((ix) => (ix !== undefined ? ix : this.deps.whole(binary)));
    if (!this.deps.started(binary)) return viaFile;
    // A whole build under way may finish first; its failure leaves the file's own index to answer.
    return Promise.race([viaFile, this.deps.whole(binary).catch(() => viaFile)]);
  }

  /** The lenses of a file of `binary` were computed from its own index: the whole build need wait no longer. */
  use(binary: string): void {
    this.waiting.get(binary)?.();
  }

  private behind(binary: string, fileReady: boolean): void {
    const start = () => {
      this.waiting.delete(binary);
      if (!this.deps.started(binary) && this.deps.ready(binary) === undefined) this.deps.whole(binary).catch(() => undefined);
    };
    const wait = fileReady ? this.deps.waitForUseMs?.() : undefined;
    if (wait === undefined || this.deps.ready(binary) !== undefined) return start();
    if (this.waiting.has(binary)) return;
    const timer = setTimeout(start, wait);
    this.waiting.set(binary, () => {
      clearTimeout(timer);
      start();
    });
  }

  /** Where the binary's index stands, for the status bar. */
  stage(binary: string): IndexStage {
    if (this.deps.ready(binary) !== undefined) return 'ready';
    if (this.fileReady.has(binary)) return 'open-file-ready';
    return this.deps.started(binary) || this.files.has(binary) ? 'indexing' : 'idle';
  }

  /** Forgets the binary's file indexes (its whole index is ready, or the file changed and is indexed again). */
  drop(binary: string): void {
    this.files.delete(binary);
    this.fileReady.delete(binary);
    this.waiting.get(binary)?.();
  }
}
