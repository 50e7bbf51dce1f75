// Test-only extension for test/e2e/harness.test.ts. Each feature reports what it saw in a notification, so the
// test can tell that the harness clicked the right thing (the lens of a given line, the line under the cursor).
// Plain CommonJS so it needs no build step: the harness packages this folder as it is.
/* global require, module */
'use strict';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const vscode = require('vscode');

function activate(context) {
  context.subscriptions.push(
    vscode.languages.registerCodeLensProvider(
      { language: 'c' },
      {
        provideCodeLenses(doc) {
          const lenses = [];
          for (let i = 0; i < doc.lineCount; i++) {
            const m = /^\w[\w\s*]*?\b(\w+)\s*\([^;]*$/.exec(doc.lineAt(i).text);
            if (m) {
              lenses.push(
                new vscode.CodeLens(new vscode.Range(i, 0, i, 0), {
                  title: `Harness lens ${m[1]}`,
                  command: 'probelensHarness.lensClicked',
                  arguments: [m[1], i + 1],
                }),
              );
            }
          }
          return lenses;
        },
      },
    ),
    vscode.commands.registerCommand('probelensHarness.lensClicked', (name, line) =>
      vscode.window.showInformationMessage(`harness lens clicked: ${name} at line ${line}`),
    ),
    vscode.commands.registerCommand('probelensHarness.whereAmI', () => {
      const ed = vscode.window.activeTextEditor;
      return vscode.window.showInformationMessage(`harness context menu: line ${ed ? ed.selection.active.line + 1 : '?'}`);
    }),
    vscode.commands.registerCommand('probelensHarness.openPanel', () => {
      const panel = vscode.window.createWebviewPanel('probelensHarness', 'Harness Panel', vscode.ViewColumn.Beside, {
        enableScripts: true,
      });
      panel.webview.html =
        '<!DOCTYPE html><html><body><div id="harness-webview">harness webview says hi</div>' +
        '<button id="harness-button" onclick="acquireVsCodeApi().postMessage(\'clicked\')">Click</button></body></html>';
      panel.webview.onDidReceiveMessage((msg) => vscode.window.showInformationMessage(`harness webview message: ${msg}`));
    }),
  );
}

module.exports = { activate, deactivate() {} };
