/**
 * Every subcommand's command line, in the order `npu-fault --help` lists them. Kept apart
 * from the implementations, which are loaded only when called (so `npu-fault parse` does
 * not pay for the controller's imports, and `--help` for none of them).
 */
import type { CommandSpec } from './args.js';
import { EXIT_NOT_IN_BUILD, type CliIO, type Subcommand } from './io.js';
import { BENCH, DEMO, PARSE, REPLAY } from './specs.js';

/** A subcommand: its command line, and how to load its implementation. */
export interface CommandEntry {
  spec: CommandSpec;
  /** Loads the implementation. */
  load: () => Promise<Subcommand>;
  /** A development command: it lives in stack/, present in a checkout and absent from the build. */
  dev?: true;
}

/** The development commands stack/index.ts provides (it checks itself against this type). */
export type DevCommandName = 'demo' | 'bench';
export type DevCommandLoaders = Readonly<Record<DevCommandName, () => Promise<Subcommand>>>;

/**
 * stack/'s door, relative to this file. A variable, not a string literal, so that the
 * compiler does not follow it: `npm run build` and the image hold no demo stack, benchmark
 * or test plane (hack/image-context.test.ts checks it). In a checkout tsx resolves it to
 * stack/index.ts; in a build, dist/stack/ does not exist.
 */
const DEV_DOOR: string = '../stack/index.js';

/** Loads development command `name` from stack/, or a stand-in saying this build lacks it. */
async function loadDevCommand(name: DevCommandName): Promise<Subcommand> {
  let door: { devCommands: DevCommandLoaders };
  try {
    door = (await import(DEV_DOOR)) as { devCommands: DevCommandLoaders };
  } catch (error) {
    // Only stack/ itself missing means "not in this build"; a broken import inside it is a bug to show.
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' || !String((error as Error).message).includes('stack/index'))
      throw error;
    return async (_args: string[], io: CliIO): Promise<number> => {
      io.stderr(`npu-fault ${name}: not in this build; run it from a checkout\n`);
      return EXIT_NOT_IN_BUILD;
    };
  }
  return door.devCommands[name]();
}

/** The subcommands. */
export const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  replay: { spec: REPLAY, load: async () => (await import('./replay.js')).replay },
  parse: { spec: PARSE, load: async () => (await import('./parse.js')).parse },
  // The full command line lives in cli/status/args.ts (loading it loads client-node).
  status: {
    spec: {
      name: 'status',
      synopsis: '[--watch] [--node <name>] [-o table|wide|json]',
      summary: "table of the cluster's published status (worst first)",
      description: '',
      options: {},
      positionals: { name: 'argument', min: 0, max: 0 },
    },
    load: async () => (await import('./status/index.js')).status,
  },
  explain: {
    spec: {
      name: 'explain',
      synopsis: '<node>[/<device>] [--controller-url <url>] [-o text|json]',
      summary: "why a device has its status (asks the leading controller for the engine's state)",
      description: '',
      options: {},
      positionals: { name: '<node>[/<device>]', min: 1, max: 1 },
    },
    load: async () => (await import('./explain.js')).explain,
  },
  // The full command lines of clear and remediation live in their modules (they need the
  // annotation and ConfigMap names); these are what `npu-fault --help` lists.
  clear: {
    spec: {
      name: 'clear',
      synopsis: '<node>[/<device>] [--wait] [--timeout <duration>]',
      summary: 'clear latched failures (through the Node annotation npu-fault.io/clear)',
      description: '',
      options: {},
      positionals: { name: '<node>[/<device>]', min: 1, max: 1 },
    },
    load: async () => (await import('./clear.js')).clear,
  },
  remediation: {
    spec: {
      name: 'remediation',
      synopsis: 'reset|status [options]',
      summary: 'self-healing: close the circuit breaker (reset), show it and the remediated nodes (status)',
      description: '',
      options: {},
      positionals: { name: 'subcommand', min: 1, max: 1 },
    },
    load: async () => (await import('./remediation.js')).remediation,
  },
  agent: {
    spec: {
      name: 'agent',
      synopsis: '[options]',
      summary:
        'run the node agent (samples the accelerators, pushes snapshots, serves the node’s status to its pods)',
      description: '',
      options: {},
      positionals: { name: 'argument', min: 0, max: 0 },
    },
    load: async () => (await import('./agent.js')).agent,
  },
  function: {
    spec: {
      name: 'function',
      synopsis: '[options]',
      summary: 'run an ingest function (validates agents’ snapshots, forwards them to the controllers)',
      description: '',
      options: {},
      positionals: { name: 'argument', min: 0, max: 0 },
    },
    load: async () => (await import('./function.js')).ingestFunction,
  },
  controller: {
    // The full spec (every setting a flag) is built from the config schema when the command
    // loads, so listing commands does not load the controller.
    spec: {
      name: 'controller',
      synopsis: '[options]',
      summary: 'run a controller replica (leader election, engine, published ConfigMap, Node status)',
      description: '',
      options: {},
      positionals: { name: 'argument', min: 0, max: 0 },
    },
    load: async () => (await import('./controller.js')).controller,
  },
  demo: { spec: DEMO, dev: true, load: () => loadDevCommand('demo') },
  bench: { spec: BENCH, dev: true, load: () => loadDevCommand('bench') },
};
