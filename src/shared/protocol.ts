// The typed message protocol between the extension host and the live panel (vscode-hexeditor's shape:
// one union each way). Side-effect free: both the host bundle and the browser bundle import it.

export type ToWebview =
  | { type: 'init'; version: string };

export type FromWebview =
  | { type: 'ready' };
