/**
 * The configuration loader of every component. A component declares its settings as a zod
 * object with a `.default()` per field (and `.superRefine` for cross-field rules), and its
 * main calls:
 *
 * ```ts
 * const { values } = parseArgs({ args, options: { ...configFlagOptions(schema), config: { type: 'string' } }, allowNegative: true });
 * const { config: file, ...rest } = values;
 * const config = loadConfig(schema, { flags: configFlags({ values: rest }), env: process.env, file });
 * ```
 *
 * Nested groups are plain `z.object`s: an absent group is filled in as `{}` so its fields'
 * defaults apply (a group marked `.optional()` or given its own default is left to zod).
 *
 * Precedence: flags > environment > file > schema defaults. Names come from the field's path
 * (see config-schema.ts): `lease.durationSeconds` is `--lease-duration-seconds`,
 * `NPU_FAULT_LEASE_DURATION_SECONDS`, and `lease: { durationSeconds: … }` in the file.
 * Unknown flags and unknown file keys are errors; unknown variables with the prefix are not
 * (the prefix is shared with tooling such as NPU_FAULT_CACHE).
 *
 * Failures throw one ConfigError listing every problem, one line each, naming where the bad
 * value came from: `--listen: …`, `NPU_FAULT_LISTEN: …`, `controller.yaml:12: lease.duration: …`.
 */
import { readFileSync } from 'node:fs';
import type { ParseArgsOptionsConfig } from 'node:util';
import type { z } from 'zod';
import { formatPath } from '../core/errors.js';
import { parseConfigFile, type ConfigFile, type ParsedConfigFile } from './config-file.js';
import { bareGroups, configFields, fromText, fromTexts, unwrap, type ConfigField } from './config-schema.js';
import { AppError } from './errors.js';

export type { ConfigField, FieldKind } from './config-schema.js';
export type { ConfigFile } from './config-file.js';

/** The default prefix of configuration environment variables. */
export const ENV_PREFIX = 'NPU_FAULT_';

/** Flag values by kebab-case flag name, as node:util parseArgs returns them. */
export type ConfigFlags = Readonly<
  Record<string, string | boolean | readonly (string | boolean)[] | undefined>
>;

/** Where settings come from besides the schema defaults. */
export interface LoadConfigOptions {
  /** Parsed flags (see configFlags). */
  flags?: ConfigFlags;
  /** Environment variables (pass `process.env`; nothing is read unless passed). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Environment variable prefix (default `NPU_FAULT_`). */
  envPrefix?: string;
  /** A YAML or JSON file: its path (read here) or its text with the name errors give it. */
  file?: string | ConfigFile;
}

/** Invalid configuration: `lines` holds one `where: field: message` line per problem. */
export class ConfigError extends AppError {
  readonly lines: readonly string[];
  constructor(lines: readonly string[]) {
    super('config_error', lines.join('\n'));
    this.lines = lines;
  }
}

/** A value and everything in it, read-only. */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends (...args: never[]) => unknown
    ? T
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;

/** Loads, validates and freezes a configuration; throws ConfigError naming every problem. */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  options: LoadConfigOptions = {},
): DeepReadonly<z.output<S>> {
  const fields = configFields(schema, options.envPrefix ?? ENV_PREFIX);
  const errors: string[] = [];
  const file = options.file === undefined ? undefined : readConfig(options.file, errors);
  if (file) {
    errors.push(...unknownKeys(file.parsed.value, schema, []).map((path) => unknownField(file, path)));
  }
  const layers = new Layers(file?.parsed.value ?? {});
  readEnv(fields, options.env ?? {}, layers, errors);
  readFlags(fields, options.flags ?? {}, layers, errors);
  layers.fillGroups(bareGroups(schema));
  if (options.file !== undefined && !file) throw new ConfigError(errors); // nothing more to say without the file

  const result = schema.safeParse(layers.merged);
  if (result.success && errors.length === 0) return deepFreeze(result.data) as DeepReadonly<z.output<S>>;
  for (const issue of result.success ? [] : result.error.issues) {
    const line = issueLine(issue, { file, layers, fields });
    if (line !== undefined) errors.push(line);
  }
  throw new ConfigError([...new Set(errors)]);
}

/**
 * Parses one section of a component's settings given in code (tests, a part built on its own):
 * defaults filled in and checked; throws ConfigError with one `<section>.<field>: message`
 * line per problem, as loadConfig names them.
 */
export function parseConfigSection<S extends z.ZodType>(
  schema: S,
  input: unknown,
  section: string,
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => `${[section, ...issue.path.map(String)].join('.')}: ${issue.message}`),
  );
}

/** parseArgs output → loadConfig flags (undefined values dropped). Take your own options out first. */
export function configFlags(parsed: { values: ConfigFlags }): ConfigFlags {
  return Object.fromEntries(Object.entries(parsed.values).filter(([, value]) => value !== undefined));
}

/** parseArgs `options` for every field: booleans as boolean flags, lists as repeatable strings. */
export function configFlagOptions(schema: z.ZodType): ParseArgsOptionsConfig {
  const options: ParseArgsOptionsConfig = {};
  for (const field of configFields(schema, ENV_PREFIX)) {
    options[field.flag] =
      field.kind === 'boolean'
        ? { type: 'boolean' }
        : field.kind === 'list'
          ? { type: 'string', multiple: true }
          : { type: 'string' };
  }
  return options;
}

/** Every settable field with its flag, variable, kind, description and default (for --help and docs). */
export function describeConfig(schema: z.ZodType, envPrefix = ENV_PREFIX): ConfigField[] {
  return configFields(schema, envPrefix);
}

interface LoadedFile {
  name: string;
  parsed: ParsedConfigFile;
}

function readConfig(file: string | ConfigFile, errors: string[]): LoadedFile | undefined {
  let source: ConfigFile;
  if (typeof file === 'string') {
    try {
      source = { path: file, text: readFileSync(file, 'utf8') };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      errors.push(`${file}: cannot read${typeof code === 'string' ? ` (${code})` : ''}`);
      return undefined;
    }
  } else {
    source = file;
  }
  const parsed = parseConfigFile(source);
  if ('errors' in parsed) {
    errors.push(...parsed.errors);
    return undefined;
  }
  return { name: source.path, parsed };
}

/** The file's value with flags and environment laid over it, remembering who set what. */
class Layers {
  readonly merged: Record<string, unknown>;
  /** Field name → the flag or variable that set it. */
  readonly setBy = new Map<string, string>();
  /** Fields whose text could not be read: zod's complaints about them would only repeat it. */
  readonly unreadable = new Set<string>();

  constructor(fileValue: Record<string, unknown>) {
    this.merged = structuredClone(fileValue);
  }

  set(field: ConfigField, value: unknown, by: string): void {
    let node = this.merged;
    for (const key of field.path.slice(0, -1)) {
      const next = node[key];
      node = isRecord(next) ? next : (node[key] = {});
    }
    node[field.path.at(-1) as string] = value;
    this.setBy.set(field.name, by);
    this.unreadable.delete(field.name);
  }

  /** Adds `{}` for each group nothing set, so zod applies its fields' defaults. */
  fillGroups(groups: readonly (readonly string[])[]): void {
    for (const path of groups) {
      const parent = valueAt(this.merged, path.slice(0, -1));
      const key = path.at(-1) as string;
      if (isRecord(parent) && parent[key] === undefined) parent[key] = {};
    }
  }
}

function readEnv(
  fields: readonly ConfigField[],
  env: Readonly<Record<string, string | undefined>>,
  layers: Layers,
  errors: string[],
): void {
  for (const field of fields) {
    const text = env[field.env];
    if (text === undefined) continue;
    const coerced = fromText(text, field);
    if (coerced.ok) layers.set(field, coerced.value, field.env);
    else {
      errors.push(`${field.env}: ${coerced.error}`);
      layers.unreadable.add(field.name);
    }
  }
}

function readFlags(
  fields: readonly ConfigField[],
  flags: ConfigFlags,
  layers: Layers,
  errors: string[],
): void {
  const byFlag = new Map(fields.map((field) => [field.flag, field]));
  for (const [flag, value] of Object.entries(flags)) {
    if (value === undefined) continue;
    const field = byFlag.get(flag);
    if (!field) {
      errors.push(`--${flag}: unknown flag`);
      continue;
    }
    const coerced = fromFlag(value, field);
    if (coerced.ok) layers.set(field, coerced.value, `--${flag}`);
    else {
      errors.push(`--${flag}: ${coerced.error}`);
      layers.unreadable.add(field.name);
    }
  }
}

function fromFlag(value: NonNullable<ConfigFlags[string]>, field: ConfigField): ReturnType<typeof fromText> {
  if (typeof value === 'string') return fromText(value, field);
  if (typeof value === 'boolean') {
    return field.kind === 'boolean' ? { ok: true, value } : { ok: false, error: 'expects a value' };
  }
  if (field.kind !== 'list') return { ok: false, error: 'given more than once' };
  if (value.some((item) => typeof item !== 'string')) return { ok: false, error: 'expects values' };
  return fromTexts(value as readonly string[], field.itemKind ?? 'string');
}

/** Keys of the file that no field of the schema names (objects whose schema allows extras excepted). */
function unknownKeys(value: unknown, schema: z.ZodType, path: PropertyKey[]): PropertyKey[][] {
  const { def } = unwrap(schema);
  if (def.type === 'array' && def.element && Array.isArray(value)) {
    const element = def.element;
    return value.flatMap((item, index) => unknownKeys(item, element, [...path, index]));
  }
  if (def.type !== 'object' || !value || typeof value !== 'object' || Array.isArray(value)) return [];
  const shape = def.shape ?? {};
  const allowsExtra = def.catchall !== undefined && unwrap(def.catchall).def.type !== 'never';
  return Object.entries(value).flatMap(([key, item]) => {
    const child = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (child) return unknownKeys(item, child, [...path, key]);
    return allowsExtra ? [] : [[...path, key]];
  });
}

function unknownField(file: LoadedFile, path: readonly PropertyKey[]): string {
  return fileLine(file, path, 'unknown field');
}

function fileLine(file: LoadedFile, path: readonly PropertyKey[], message: string): string {
  const line = file.parsed.lineOf(path);
  return `${file.name}${line === undefined ? '' : `:${line}`}: ${formatPath(path)}: ${message}`;
}

interface IssueContext {
  file: LoadedFile | undefined;
  layers: Layers;
  fields: readonly ConfigField[];
}

/** The line for one zod issue, naming where its value came from; undefined when already reported. */
function issueLine(issue: z.core.$ZodIssue, { file, layers, fields }: IssueContext): string | undefined {
  const path: PropertyKey[] = [...issue.path];
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    path.push(issue.keys[0] ?? '');
    message = 'unknown field';
  }
  if (path.length === 0) return `config: ${message}`;
  // The field is the longest prefix of the issue path that names one (a list item's issue
  // belongs to its list).
  for (let n = path.length; n > 0; n--) {
    const name = path.slice(0, n).join('.');
    if (layers.unreadable.has(name)) return undefined;
    const by = layers.setBy.get(name);
    if (by) return `${by}${subPath(path.slice(n))}: ${message}`;
  }
  const field = fields.find((f) => f.name === path.join('.'));
  if (field && valueAt(layers.merged, path) === undefined) {
    return `${field.name}: ${message} (set --${field.flag}, ${field.env} or ${field.name} in the file)`;
  }
  if (file && hasPath(file.parsed.value, path.slice(0, -1))) return fileLine(file, path, message);
  return `${formatPath(path)}: ${message}`;
}

/** The part of an issue path below the field a flag or variable set: `[2]`, `.key`, or nothing. */
function subPath(rest: readonly PropertyKey[]): string {
  const text = formatPath(rest);
  return text === '' || text.startsWith('[') ? text : `.${text}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return Boolean(value) && typeof value === 'object' && !Array.isArray(value);
}

function hasPath(value: unknown, path: readonly PropertyKey[]): boolean {
  let node = value;
  for (const key of path) {
    if (!node || typeof node !== 'object' || !Object.hasOwn(node, key)) return false;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return true;
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let node = value;
  for (const key of path) {
    if (!node || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}
