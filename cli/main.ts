/**
 * `npu-fault` subcommand dispatch (CONTRACT §4). Each subcommand lives in its own module and
 * is loaded only when called, so `npu-fault parse` does not pay for the controller's imports.
 */
import { readFile } from 'node:fs/promises';
import { EXIT_DATA, EXIT_NOT_IMPLEMENTED, EXIT_USAGE, type CliIO, type Subcommand } from './io.js';

interface CommandEntry {
  usage: string;
  summary: string;
  /** Loads the implementation; undefined while its issue has not landed. */
  load?: () => Promise<Subcommand>;
  /** The issue that will deliver a command not yet implemented. */
  pending?: string;
}

/** Every subcommand, in the order `--help` lists them. */
export const COMMANDS: Record<string, CommandEntry> = {
  replay: {
    usage: 'replay <snapshots.jsonl> [--rules <file>] [--published]',
    summary: 'feed recorded snapshots through the detection engine; print status changes',
    load: async () => (await import('./replay.js')).replay,
  },
  parse: {
    usage: 'parse --from hdc|npu-smi|nvidia-smi <file> [--node <name>]',
    summary: 'turn one real tool output into an hdc.health/v1 snapshot',
    load: async () => (await import('./parse.js')).parse,
  },
  status: {
    usage: 'status [--watch]',
    summary: "table of the cluster's published status",
    pending: 'Consumers',
  },
  clear: {
    usage: 'clear <node>[/<device>]',
    summary: 'clear latched failures (through the Node annotation)',
    pending: 'Self-healing',
  },
  agent: { usage: 'agent', summary: 'run the node agent', pending: 'Agent' },
  function: { usage: 'function', summary: 'run the ingest function', pending: 'Ingest functions' },
  controller: { usage: 'controller', summary: 'run the controller', pending: 'Controller' },
  demo: {
    usage: 'demo [--fast]',
    summary: 'simulate a mixed 16-node fleet through the engine and print what happens',
    load: async () => (await import('./demo.js')).demo,
  },
  bench: {
    usage: 'bench',
    summary: 'measure state-machine throughput and memory per tracked device',
    load: async () => (await import('./bench.js')).bench,
  },
};

/** The text of `npu-fault --help`. */
export function helpText(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  const lines = Object.values(COMMANDS).map((c) => {
    const note = c.pending ? ` (not yet: lands with the ${c.pending} issue)` : '';
    return `  ${c.usage.padEnd(width)}  ${c.summary}${note}`;
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

/** The real process I/O. */
export function processIO(): CliIO {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    readFile: (path) => readFile(path, 'utf8'),
    isTTY: Boolean(process.stdout.isTTY),
  };
}

/** Runs one command line and returns the exit code; never throws. */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(helpText());
    return name === undefined ? EXIT_USAGE : 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    io.stderr(`npu-fault: unknown command '${name}'; run 'npu-fault --help'\n`);
    return EXIT_USAGE;
  }
  if (!entry.load) {
    io.stderr(`npu-fault ${name}: not implemented yet; it lands with the ${entry.pending} issue\n`);
    return EXIT_NOT_IMPLEMENTED;
  }
  try {
    const run = await entry.load();
    return await run(rest, io);
  } catch (error) {
    // A subcommand reports its own errors; this is the last guard against a stack trace.
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`npu-fault ${name}: ${message.split('\n')[0]}\n`);
    return EXIT_DATA;
  }
}
