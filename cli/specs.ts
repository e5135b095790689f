/**
 * The command lines of the implemented subcommands (options, positionals and help text),
 * as data: cli/commands.ts lists them without loading the implementations.
 */
import type { CommandSpec } from './args.js';

/** Device-samples per second the state machine must sustain on one core (bench). */
export const THROUGHPUT_TARGET = 200_000;
/** Fleet sizes whose heap per device is measured (bench). */
export const MEMORY_SIZES = [8_000, 80_000] as const;

/** The replay command line. */
export const REPLAY: CommandSpec = {
  name: 'replay',
  synopsis: '<snapshots.jsonl|-> [--rules <file>] [--published]',
  summary: 'feed recorded snapshots through the detection engine; print status changes',
  description: `Feeds hdc.health/v1 snapshots (one JSON object per line; blank lines are skipped;
'-' reads standard input) through the detection engine in file order (the arrival order),
using collected_at as the clock, and prints one JSON line per change of a device's
published status:
  {"at":"<ISO time>","node":"…","npu":"npu3","from":"healthy","to":"degraded","reason":"high-temp"}`,
  options: {
    rules: {
      type: 'string',
      value: '<file>',
      description: 'rules file (YAML or JSON); default: the built-in defaults',
    },
    published: {
      type: 'boolean',
      description: 'print the final fault.json document instead of the transitions',
    },
  },
  positionals: { name: '<snapshots.jsonl>', min: 1, max: 1 },
  footer: `The first bad line stops the replay with '<file>:<line>: <field>: <message>' on stderr,
exit 1, and nothing on stdout. Exit codes: 0 done, 1 bad input (snapshots or rules),
2 bad usage.`,
};

/** The parse command line. */
export const PARSE: CommandSpec = {
  name: 'parse',
  synopsis: '--from hdc|npu-smi|nvidia-smi <file|-> [--node <name>] [--fields <list>]',
  summary: 'turn one real tool output into an hdc.health/v1 snapshot',
  description: `Turns one saved tool output ('-' reads standard input) into an hdc.health/v1
snapshot and prints it as JSON. The node defaults to the file's base name, lower-cased
and reduced to a DNS name; collected_at is the time the output prints, else now.`,
  options: {
    from: {
      type: 'string',
      value: '<tool>',
      description:
        'hdc (hdc health -j JSON), npu-smi (npu-smi info table), or nvidia-smi (CSV, -q, -q -x, table)',
    },
    node: {
      type: 'string',
      value: '<name>',
      description: "node name for the snapshot; default: from the file's name",
    },
    fields: {
      type: 'string',
      value: '<f1,f2,...>',
      description: "field list of a --format=csv,noheader file (default: the agent's query fields)",
    },
  },
  positionals: { name: 'file to parse', min: 1, max: 1 },
  footer: `Exit codes: 0 done, 1 bad input (one line naming the file and the line or field), 2 bad usage.`,
};

/** The demo command line. */
export const DEMO: CommandSpec = {
  name: 'demo',
  synopsis:
    '[--pipeline] [--existing-cluster] [--scenario full|short] | --engine-only [--fast] [--speed <x>] [--seed <n>]',
  summary: 'run the real pipeline on a simulated 16-node fleet (or, --engine-only, the engine alone)',
  description: `Runs the real pipeline (the default): a local control plane (built from Go modules on
the first run, about twelve minutes on two cores) or, with --existing-cluster, the cluster of
$KUBECONFIG; the shipped RBAC in a demo namespace; two controller replicas and an ingest
function as processes under their ServiceAccounts' tokens; a simulated agent per kwok node
(910B, A3, 310P, H100) under its own pod-bound token. It injects faults through the agents'
fault API (heat, an ECC storm ending uncorrectable, a PCIe link down, a vanished card, a
silent agent), kills the leading replica mid-scenario, shows the published status live and
ends with a report of when the ConfigMap, an API watch and the node's SSE stream saw each
fault; it exits 1 if a device ends in the wrong state.

With --engine-only (implied by --fast, --speed or --seed) it simulates the same kind of fleet
for five minutes in-process instead (seconds, no Go, no cluster): every snapshot through the
detection engine, each change of a device's status printed.`,
  options: {
    'engine-only': {
      type: 'boolean',
      description: 'the in-process simulation through the engine (seconds, no Go, no cluster)',
    },
    pipeline: {
      type: 'boolean',
      description: 'the real pipeline (the default): control plane, controllers, function, 16 agents',
    },
    'existing-cluster': {
      type: 'boolean',
      description:
        'with --pipeline: run on the cluster of $KUBECONFIG (cluster-admin) instead of a local one',
    },
    scenario: {
      type: 'string',
      value: 'full|short',
      description: 'with --pipeline: full (16 nodes, the default) or short (5 nodes, the same faults)',
    },
    fast: {
      type: 'boolean',
      description: 'print everything at once (also the default when stdout is not a terminal)',
    },
    speed: {
      type: 'string',
      value: '<x>',
      description: 'simulated seconds per wall-clock second (default 12: about 25 s in all)',
    },
    seed: {
      type: 'string',
      value: '<n>',
      description: 'another seed: other noise, phases and delays; the same faults',
    },
  },
  positionals: { name: 'argument', min: 0, max: 0 },
  footer:
    'Exit codes: 0 every device behaved as labelled, 1 a device did not (or the pipeline failed), 2 bad usage.',
};

/**
 * 1,000,000 style, without Intl: this module is loaded by every command, the agent's too, and
 * the first Intl.NumberFormat maps about 4.5 MiB of ICU data into the process.
 */
function groupThousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** The bench command line. */
export const BENCH: CommandSpec = {
  name: 'bench',
  synopsis: '[--devices N] [--seconds S] [--runs R] [--check]',
  summary: 'measure state-machine throughput and memory per tracked device',
  description: `Measures the detection engine on one core, with snapshots built up front (not timed):
  1. state-machine throughput: engine.observe over N devices x S samples, median of R runs
     after a warm-up run (target >= ${groupThousands(THROUGHPUT_TARGET)} device-samples/s)
  2. heap per tracked device for engines tracking ${MEMORY_SIZES.map(groupThousands).join(' and ')} devices (forced GC)
  3. normalisation, snapshot validation (JSON.parse + zod) and document rendering`,
  options: {
    devices: {
      type: 'string',
      value: 'N',
      description: 'devices in the throughput workload (default 8000: 1,000 nodes of 8)',
    },
    seconds: { type: 'string', value: 'S', description: 'samples per device (default 60)' },
    runs: { type: 'string', value: 'R', description: 'timed runs (default 5)' },
    check: { type: 'boolean', description: 'exit 1 when throughput is under the target' },
  },
  positionals: { name: 'argument', min: 0, max: 0 },
  footer:
    'The last line of output is one JSON object with every figure.\n' +
    'npu-fault bench pipeline --help: the whole pipeline on a local control plane (npm run bench -- pipeline).',
};
