// Fixture workspaces: test/fixtures/workspaces/NAME holds what makes a folder a user's project (.vscode/settings.json
// and such); the sources come from test/fixtures/src/NAME, shared with the other tiers. Tests get a copy, so
// whatever the editor or the extension writes (.vscode/probelens.json, build output) never touches the repo.
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './vsix';

export const WORKSPACES_DIR = join(REPO_ROOT, 'test', 'fixtures', 'workspaces');
export const FIXTURE_SOURCES_DIR = join(REPO_ROOT, 'test', 'fixtures', 'src');

/** Copies fixture workspace `name` (with its sources) into `parent`/`name` and returns that folder. */
export function prepareWorkspace(name: string, parent: string): string {
  const from = join(WORKSPACES_DIR, name);
  if (!existsSync(from)) {
    throw new Error(`no fixture workspace ${from}\n  next step: create it, or pass an absolute folder as the workspace`);
  }
  const dir = join(parent, name);
  cpSync(from, dir, { recursive: true });
  const sources = join(FIXTURE_SOURCES_DIR, name);
  if (existsSync(sources)) cpSync(sources, dir, { recursive: true, force: false });
  return dir;
}
