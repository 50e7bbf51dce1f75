// The command line an SSH exec request carries. sshd hands it to the user's LOGIN shell, which may be bash,
// dash, zsh, but also fish or csh — and those read quoted text differently (fish treats `\\` inside single
// quotes as an escape, csh rejects newlines in quotes). So a program whose argv is not plain words is not
// quoted into the command line at all: the command is a fixed one-line bootstrap that every one of those shells
// passes through unchanged, and the real argv, POSIX-quoted, follows as the first bytes of stdin, where
// `/bin/sh` — whatever the login shell — reads exactly that many bytes and `exec`s it. The rest of stdin then
// belongs to the program.

/** Words every shell takes literally (no quoting, globbing, expansion or history characters). */
const PLAIN_WORD = /^[A-Za-z0-9_./:=@%+,-]+$/;

export interface RemoteCommand {
  /** The exec request's command line. */
  command: string;
  /** Bytes to write to the channel's stdin before anything else (empty when the argv is plain words). */
  stdinPrefix: Buffer;
}

export function remoteCommand(argv: readonly string[], sudo: boolean): RemoteCommand {
  const prefix = sudo ? 'sudo -n -- ' : '';
  if (argv.every((a) => PLAIN_WORD.test(a))) return { command: prefix + argv.join(' '), stdinPrefix: Buffer.alloc(0) };
  const payload = Buffer.from(`exec ${quoteArgv(argv)}\n`, 'utf8');
  // dd with bs=1 never reads past the payload, unlike head or read on a pipe; exit 127 if it is missing.
  const bootstrap = `sh -c 'p=$(dd bs=1 count=${payload.length} 2>/dev/null) || exit 127; eval "$p"'`;
  return { command: prefix + bootstrap, stdinPrefix: payload };
}

/** POSIX single-quote each argument so a remote login shell passes it through unchanged. */
export function quoteArgv(argv: readonly string[]): string {
  return argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
}
