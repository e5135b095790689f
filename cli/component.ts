/**
 * The command line of a long-running component (`controller`, `function`, later `agent`):
 * every setting of its zod config schema is a flag (platform/config.ts names them), `--config`
 * names a YAML/JSON file, and the environment fills in what flags leave out. `--help` lists
 * every setting with its variable and default. Configuration errors print one
 * `npu-fault <cmd>: <where>: <field>: <message>` line each and exit 2.
 */
import type { z } from 'zod';
import {
  ConfigError,
  describeConfig,
  loadConfig,
  onTerminationSignals,
  runAll,
  runGroups,
  type ConfigFlags,
  type DeepReadonly,
  type Logger,
  type Runnable,
  type StartGroup,
} from '../platform/index.js';
import { isExit, settleCommandLine, type CommandSpec, type OptionSpec } from './args.js';
import { EXIT_USAGE, type CliIO } from './io.js';

/** A component's command line, from its config schema. */
export function componentSpec(
  name: string,
  summary: string,
  description: string,
  schema: z.ZodType,
  footer?: string,
): CommandSpec {
  const options: Record<string, OptionSpec> = {
    config: { type: 'string', value: '<file>', description: 'a YAML or JSON configuration file' },
  };
  for (const field of describeConfig(schema)) {
    const fallback =
      field.defaultValue === undefined ? '' : ` (default ${JSON.stringify(field.defaultValue)})`;
    options[field.flag] = {
      type: field.kind === 'boolean' ? 'boolean' : 'string',
      ...(field.kind === 'list' ? { multiple: true } : {}),
      ...(field.kind === 'boolean' ? {} : { value: field.kind === 'list' ? '<a,b>' : '<value>' }),
      description: `${field.description ?? field.name}${fallback}; ${field.env}`,
    };
  }
  return {
    name,
    synopsis: '[options]',
    summary,
    description: `${description}\n\nSettings come from flags, then NPU_FAULT_* environment variables, then --config <file>, then defaults. Booleans take --no-<flag>.`,
    options,
    positionals: { name: 'argument', min: 0, max: 0 },
    ...(footer ? { footer } : {}),
  };
}

/** Parses the command line and loads the configuration, or prints help / errors and gives the exit code. */
export function loadComponentConfig<S extends z.ZodType>(
  spec: CommandSpec,
  schema: S,
  argv: readonly string[],
  io: CliIO,
  env: Readonly<Record<string, string | undefined>>,
): DeepReadonly<z.output<S>> | { exit: number } {
  const settled = settleCommandLine(spec, argv, io, (args) => args);
  if (isExit(settled)) return settled;
  const { config: file, ...flags } = settled.values;
  try {
    return loadConfig(schema, {
      flags: Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined)) as ConfigFlags,
      env,
      ...(typeof file === 'string' ? { file } : {}),
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const line of error.lines) io.stderr(`npu-fault ${spec.name}: ${line}\n`);
    return { exit: EXIT_USAGE };
  }
}

/**
 * Runs a component's parts (all at once, or in start groups) until SIGTERM or SIGINT, stops
 * them within the grace period, runs `afterStop`, and gives the exit code. Everything is
 * stopped by then; a socket a library still holds (or a blocking /dev/kmsg read) must not
 * keep the pod alive until it is killed, so the process exits a moment after (the timer
 * itself holds nothing).
 */
export async function runUntilSignalled(
  parts: Runnable[] | { groups: StartGroup[] },
  options: { gracePeriodMs: number; log: Logger; afterStop?: () => Promise<void> },
): Promise<number> {
  const run = {
    signal: onTerminationSignals(process),
    gracePeriodMs: options.gracePeriodMs,
    log: options.log,
  };
  const result = Array.isArray(parts) ? await runAll(parts, run) : await runGroups(parts.groups, run);
  await options.afterStop?.();
  setTimeout(() => process.exit(result.exitCode), 2000).unref();
  return result.exitCode;
}
