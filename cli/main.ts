/**
 * `npu-fault` subcommand dispatch (CONTRACT §4). Each subcommand declares its command line
 * in cli/specs.ts (one parser for all, cli/args.ts) and lives in its own module, loaded only
 * when called.
 */
import { COMMANDS } from './commands.js';
import { EXIT_DATA, EXIT_USAGE, type CliIO } from './io.js';
import { processIO } from './process-io.js';

export { COMMANDS };

/** The text of `npu-fault --help`. */
export function helpText(): string {
  const entries = Object.values(COMMANDS);
  const usage = (e: (typeof entries)[number]): string => `${e.spec.name} ${e.spec.synopsis}`.trimEnd();
  const width = Math.max(...entries.map((e) => usage(e).length));
  const lines = entries.map((e) => {
    const note = e.dev ? ' (development: from a checkout)' : '';
    return `  ${usage(e).padEnd(width)}  ${e.spec.summary}${note}`;
  });
  return [
    'Usage: npu-fault <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Run `npu-fault <command> --help` for details.',
    '',
  ].join('\n');
}

/** Runs one command line and returns the exit code; never throws. */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(helpText());
    return name === undefined ? EXIT_USAGE : 0;
  }
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!entry) {
    io.stderr(`npu-fault: unknown command '${name.slice(0, 40)}'; run 'npu-fault --help'\n`);
    return EXIT_USAGE;
  }
  try {
    const run = await entry.load();
    return await run(rest, io);
  } catch (error) {
    // A subcommand reports its own errors; this is the last guard against a stack trace.
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`npu-fault ${name}: ${(message.split('\n')[0] ?? '').slice(0, 200)}\n`);
    return EXIT_DATA;
  }
}
