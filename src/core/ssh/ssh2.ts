// The one module that loads ssh2 at run time, on the first SSH connection or key read: a local trace, an index or
// `probelens --version` never pays for it (reading, compiling and running ssh2 and its crypto took ~40 ms of every
// start). From source it is the package; from the bundles it is dist/ssh2.js, a bundle of its own (esbuild.mjs).
// Other modules import ssh2's types only.
// Tests: test/integration/bundles.test.ts, test/integration/ssh.test.ts
import type * as Ssh2 from 'ssh2';

let ssh2: typeof Ssh2 | undefined;

export function loadSsh2(): typeof Ssh2 {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (ssh2 ??= require('ssh2') as typeof Ssh2);
}
