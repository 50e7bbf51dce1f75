import { PROBELENS_VERSION } from '../core/version';

const USAGE = `probelens ${PROBELENS_VERSION}
usage: probelens <command> [options]
commands: functions, lines, vars, usdt, define, trace, cleanup
`;

function main(argv: string[]): number {
  const [cmd] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (cmd === '--version') {
    process.stdout.write(`${PROBELENS_VERSION}\n`);
    return 0;
  }
  process.stderr.write(`probelens: unknown command '${cmd}'; run 'probelens --help' for the list.\n`);
  return 2;
}

process.exitCode = main(process.argv.slice(2));
