// The live panel's HTML page. A pure function (no `vscode` import) so the Chromium tests and the benchmark
// load exactly the page VS Code shows. Nonce-based CSP, no 'unsafe-inline': only our bundle runs; styles
// come from our extension's origin, the toolkit's constructable stylesheets (not subject to style-src),
// CSSOM writes (allowed), and one probe <style> FAST adds to detect :focus-visible, which carries the
// nonce it reads from <meta property="csp-nonce">.
// Tests: test/unit/webview/panel.dom.test.ts, test/unit/webview/panelLayout.dom.test.ts
import { randomBytes } from 'node:crypto';

export interface PanelHtmlOptions {
  /** webview.cspSource */
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce?: string;
}

export function makeNonce(): string {
  return randomBytes(18).toString('base64url');
}

export function panelCsp(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
  ].join('; ');
}

const escapeAttr = (s: string): string => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function renderPanelHtml(o: PanelHtmlOptions): string {
  const nonce = o.nonce ?? makeNonce();
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttr(panelCsp(o.cspSource, nonce))}">
<meta property="csp-nonce" content="${escapeAttr(nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeAttr(o.styleUri)}">
<title>ProbeLens: Live Hits</title>
</head>
<body>
<script nonce="${escapeAttr(nonce)}" src="${escapeAttr(o.scriptUri)}"></script>
</body>
</html>
`;
}
