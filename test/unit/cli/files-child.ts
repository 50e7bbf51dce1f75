// Child of files.test.ts: loads the index of each path given (argv[2], JSON) the way the CLI and the editor do,
// and prints one JSON line per case. A case that blocks in open(2) never answers: the parent's timeout sees it.
import { loadIndex } from '../../../src/core/index/load';

interface Case {
  path: string;
  noCache?: boolean;
  inWorker?: boolean;
  cacheDir?: string;
}

async function main(): Promise<void> {
  for (const c of JSON.parse(process.argv[2]) as Case[]) {
    try {
      const r = await loadIndex(c.path, { noCache: c.noCache, inWorker: c.inWorker, cacheDir: c.cacheDir });
      process.stdout.write(`${JSON.stringify({ ok: true, fromCache: r.fromCache, functions: r.index.data.functions.length })}\n`);
    } catch (e) {
      const err = e as Error;
      process.stdout.write(`${JSON.stringify({ ok: false, name: err.name, message: err.message })}\n`);
    }
  }
}

void main();
