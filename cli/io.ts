/** What a subcommand may touch: its output streams and its input files, passed in for tests. */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Reads a whole file as UTF-8; `-` is standard input. */
  readFile(path: string): Promise<string>;
  /** Streams a file in chunks, for inputs larger than memory; `-` is standard input. */
  readStream(path: string): AsyncIterable<Uint8Array | string>;
  /** True when stdout is a terminal (colour and live redraws are allowed). */
  isTTY: boolean;
}

/** A subcommand: parses its own arguments and returns the process exit code. */
export type Subcommand = (args: string[], io: CliIO) => Promise<number>;

/** Exit code for bad usage (unknown flag, missing argument). */
export const EXIT_USAGE = 2;
/** Exit code for bad input data (unparsable file, invalid snapshot). */
export const EXIT_DATA = 1;
/** Exit code of a development command run from a build that leaves it out (the image). */
export const EXIT_NOT_IN_BUILD = 3;

/** The name a path goes by in messages (`-` is standard input). */
export function inputName(path: string): string {
  return path === '-' ? '<stdin>' : path;
}

/** `<file>: cannot read (ENOENT)`: the one line for an input that could not be read. */
export function cannotRead(path: string, error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return `${inputName(path)}: cannot read${typeof code === 'string' ? ` (${code})` : ''}`;
}
