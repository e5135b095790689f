/** What a subcommand may touch: its output streams and the file system, passed in for tests. */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  readFile(path: string): Promise<string>;
  /** True when stdout is a terminal (colour and live redraws are allowed). */
  isTTY: boolean;
}

/** A subcommand: parses its own arguments and returns the process exit code. */
export type Subcommand = (args: string[], io: CliIO) => Promise<number>;

/** Exit code for bad usage (unknown flag, missing argument). */
export const EXIT_USAGE = 2;
/** Exit code for bad input data (unparsable file, invalid snapshot). */
export const EXIT_DATA = 1;
/** Exit code of a subcommand whose issue has not landed yet. */
export const EXIT_NOT_IMPLEMENTED = 3;

/**
 * Settles what a subcommand's argument parser returned: prints the help (exit 0) or a
 * one-line usage error (exit 2) and returns the exit code, or returns the parsed options.
 */
export function settleArgs<T extends object>(
  command: string,
  parsed: T | 'help' | string,
  help: string,
  io: CliIO,
): T | number {
  if (parsed === 'help') {
    io.stdout(help);
    return 0;
  }
  if (typeof parsed === 'string') {
    io.stderr(`npu-fault ${command}: ${parsed}; run 'npu-fault ${command} --help'\n`);
    return EXIT_USAGE;
  }
  return parsed;
}
