import type { FromWebview, ToWebview } from '../src/shared/protocol';

declare function acquireVsCodeApi(): { postMessage(msg: FromWebview): void };

const vscodeApi = acquireVsCodeApi();
window.addEventListener('message', (ev: MessageEvent<ToWebview>) => {
  const msg = ev.data;
  if (msg.type === 'init') document.body.dataset.version = msg.version;
});
vscodeApi.postMessage({ type: 'ready' });
