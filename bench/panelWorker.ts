// The host side of `bench:panel`, in a browser worker: SyntheticHitSource → a session's Aggregates (the counts the
// panel shows) and the real PanelFeed (batching, column encoding, stats) → postMessage to the page, which hands each message to the webview as a window
// 'message' event. A worker keeps the feed off the webview's main thread, as the extension host is in VS Code.
import { Aggregates } from '../src/core/session/aggregates';
import { PanelFeed } from '../src/vscode/panel/panelFeed';
import { SyntheticHitSource } from './syntheticHitSource';

interface WorkerScope {
  postMessage(m: unknown): void;
  onmessage: ((e: MessageEvent) => void) | null;
}
const scope = self as unknown as WorkerScope;

let source: SyntheticHitSource | undefined;
let feed: PanelFeed | undefined;

type Command =
  | { cmd: 'start'; rate: number; seconds: number; capacity?: number; drawnAcks?: boolean }
  | { cmd: 'drawn'; batches: number }
  | { cmd: 'stop' };

scope.onmessage = (e: MessageEvent<Command>) => {
  if (e.data.cmd === 'drawn') feed?.drawn(e.data.batches);
  else if (e.data.cmd === 'start') {
    setTimeout(() => {
      source?.stop();
      feed?.flush();
    }, e.data.seconds * 1000);
    // A page that never says which batches it drew (the naive baseline) is fed by time alone, as before flow control.
    feed = new PanelFeed({
      version: 'bench',
      maxBatch: 5_000,
      historyCapacity: e.data.capacity,
      ...(e.data.drawnAcks ? {} : { drawnWaitMs: 0 }),
    });
    const aggregates = new Aggregates();
    feed.watch(aggregates);
    feed.attach((msg) => scope.postMessage(msg));
    source = new SyntheticHitSource(e.data.rate);
    const f = feed;
    source.start((hits) => {
      for (const h of hits) aggregates.add(h);
      f.post(hits);
    });
  } else {
    source?.stop();
    feed?.dispose();
    scope.postMessage({ benchStopped: true, generated: source?.count ?? 0 });
  }
};
