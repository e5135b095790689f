/**
 * What the config loader reads from a zod schema: its settable fields (the leaves of nested
 * objects), each field's flag and environment variable names, and how a text value (an
 * environment variable, a string flag) becomes a value of the field's type.
 *
 * Names, from a field's path (camelCase or snake_case keys):
 *   `metricsListen`         → `--metrics-listen`         `NPU_FAULT_METRICS_LISTEN`
 *   `lease.durationSeconds` → `--lease-duration-seconds` `NPU_FAULT_LEASE_DURATION_SECONDS`
 *
 * Text values: numbers as decimal literals (`15`, `-0.5`, `1e3`); booleans as
 * true/false, 1/0, yes/no, on/off (any case); lists as comma-separated items (`a, b`;
 * empty text is an empty list; each repeated flag may hold several) or one JSON array
 * (`["a,b"]`); records and other structured fields as JSON.
 */
import { z } from 'zod';

/** How a field's value is written as text. */
export type FieldKind = 'string' | 'number' | 'boolean' | 'list' | 'json' | 'union';

/** One settable field of a config schema. */
export interface ConfigField {
  /** Keys from the root (`['lease', 'durationSeconds']`). */
  path: readonly string[];
  /** `lease.durationSeconds`. */
  name: string;
  /** The flag, without dashes (`lease-duration-seconds`). */
  flag: string;
  /** The environment variable (`NPU_FAULT_LEASE_DURATION_SECONDS`). */
  env: string;
  kind: FieldKind;
  /** For lists, the kind of each item. */
  itemKind?: FieldKind;
  /** For unions, the kinds it accepts. */
  unionKinds?: readonly FieldKind[];
  /** The schema's `.describe()` text. */
  description?: string;
  /** The schema default, when it has one. */
  defaultValue?: unknown;
}

/** What a zod schema is made of, read through its def (zod 4). */
interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  options?: readonly z.ZodType[];
  values?: readonly unknown[];
  catchall?: z.ZodType;
  defaultValue?: unknown;
  getter?: () => z.ZodType;
}

const defOf = (schema: z.ZodType): Def => schema._zod.def as unknown as Def;

/** A schema without its wrappers (default, optional, pipe, …), with what they said. */
export interface Unwrapped {
  base: z.ZodType;
  def: Def;
  description?: string;
  hasDefault: boolean;
  defaultValue?: unknown;
}

const WRAPPERS = new Set(['optional', 'nullable', 'readonly', 'catch', 'nonoptional', 'default', 'prefault']);

/** Looks through wrappers to the schema that decides the value's type (a transform's input). */
export function unwrap(schema: z.ZodType): Unwrapped {
  let current = schema;
  const out: Unwrapped = { base: schema, def: defOf(schema), hasDefault: false };
  for (let depth = 0; depth < 32; depth++) {
    const def = defOf(current);
    out.description ??= current.description;
    if ((def.type === 'default' || def.type === 'prefault') && !out.hasDefault) {
      out.hasDefault = true;
      out.defaultValue = def.defaultValue;
    }
    const inner = WRAPPERS.has(def.type)
      ? def.innerType
      : def.type === 'pipe'
        ? def.in
        : def.type === 'lazy'
          ? def.getter?.()
          : undefined;
    if (!inner) break;
    current = inner;
  }
  out.base = current;
  out.def = defOf(current);
  return out;
}

/** The settable fields of an object schema; throws when two fields would share a name. */
export function configFields(schema: z.ZodType, envPrefix: string): ConfigField[] {
  const root = unwrap(schema);
  if (root.def.type !== 'object') throw new TypeError('config schema: the root must be a zod object');
  const fields: ConfigField[] = [];
  collect(root.def.shape ?? {}, [], envPrefix, fields);
  assertDistinct(fields);
  return fields;
}

/**
 * Paths of the nested groups with no wrapper (no default, prefault or optional), parents
 * first. The loader fills in an absent one with `{}`, so its fields' defaults apply without
 * the group spelling out a default of its own.
 */
export function bareGroups(schema: z.ZodType): string[][] {
  const out: string[][] = [];
  const walk = (shape: Record<string, z.ZodType>, parent: string[]): void => {
    for (const [key, child] of Object.entries(shape)) {
      const def = defOf(child);
      if (def.type !== 'object') continue;
      out.push([...parent, key]);
      walk(def.shape ?? {}, [...parent, key]);
    }
  };
  const root = unwrap(schema);
  if (root.def.type === 'object') walk(root.def.shape ?? {}, []);
  return out;
}

function collect(
  shape: Record<string, z.ZodType>,
  parent: string[],
  envPrefix: string,
  out: ConfigField[],
): void {
  for (const [key, schema] of Object.entries(shape)) {
    const path = [...parent, key];
    const field = unwrap(schema);
    if (field.def.type === 'object') {
      collect(field.def.shape ?? {}, path, envPrefix, out);
      continue;
    }
    const kind = kindOf(field.def);
    out.push({
      path,
      name: path.join('.'),
      flag: path.map(kebab).join('-'),
      env: envPrefix + path.map(kebab).join('-').toUpperCase().replaceAll('-', '_'),
      kind,
      ...(kind === 'list' && field.def.element ? { itemKind: kindOf(unwrap(field.def.element).def) } : {}),
      ...(kind === 'union'
        ? { unionKinds: (field.def.options ?? []).map((o) => kindOf(unwrap(o).def)) }
        : {}),
      ...(field.description === undefined ? {} : { description: field.description }),
      ...(field.hasDefault ? { defaultValue: field.defaultValue } : {}),
    });
  }
}

function kindOf(def: Def): FieldKind {
  switch (def.type) {
    case 'string':
    case 'enum':
    case 'template_literal':
      return 'string';
    case 'number':
    case 'int':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return 'list';
    case 'union':
      return 'union';
    case 'literal':
      return (def.values ?? []).every((v) => typeof v === 'number')
        ? 'number'
        : (def.values ?? []).every((v) => typeof v === 'boolean')
          ? 'boolean'
          : 'string';
    default:
      return 'json';
  }
}

/** `durationSeconds` → `duration-seconds`, `metricsURL` → `metrics-url`, `threshold_c` → `threshold-c`. */
export function kebab(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2')
    .replaceAll('_', '-')
    .toLowerCase();
}

function assertDistinct(fields: readonly ConfigField[]): void {
  const byFlag = new Map<string, string>();
  for (const field of fields) {
    const other = byFlag.get(field.flag);
    if (other)
      throw new TypeError(`config schema: fields ${other} and ${field.name} both map to --${field.flag}`);
    byFlag.set(field.flag, field.name);
  }
}

/** A coerced value, or why the text is not one. */
export type Coerced = { ok: true; value: unknown } | { ok: false; error: string };

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;
const BOOLEANS: Readonly<Record<string, boolean>> = {
  true: true,
  false: false,
  '1': true,
  '0': false,
  yes: true,
  no: false,
  on: true,
  off: false,
};

/** Turns the text of an environment variable or string flag into a value of `field`'s kind. */
export function fromText(
  text: string,
  field: Pick<ConfigField, 'kind' | 'itemKind' | 'unionKinds'>,
): Coerced {
  switch (field.kind) {
    case 'string':
      return { ok: true, value: text };
    case 'number':
      return NUMBER.test(text.trim())
        ? { ok: true, value: Number(text) }
        : { ok: false, error: 'expected a number' };
    case 'boolean': {
      const value = BOOLEANS[text.trim().toLowerCase()];
      return value === undefined ? { ok: false, error: 'expected true or false' } : { ok: true, value };
    }
    case 'list':
      return listFromText(text, field.itemKind ?? 'string');
    case 'union':
      return unionFromText(text, field.unionKinds ?? []);
    case 'json':
      return jsonFromText(text);
  }
}

/** Items of a list as given by repeated flags: each occurrence is itself a list. */
export function fromTexts(texts: readonly string[], itemKind: FieldKind): Coerced {
  const items: unknown[] = [];
  for (const text of texts) {
    const part = listFromText(text, itemKind);
    if (!part.ok) return part;
    items.push(...(part.value as unknown[]));
  }
  return { ok: true, value: items };
}

function listFromText(text: string, itemKind: FieldKind): Coerced {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    const parsed = jsonFromText(trimmed);
    return parsed.ok && !Array.isArray(parsed.value) ? { ok: false, error: 'expected a JSON array' } : parsed;
  }
  if (trimmed === '') return { ok: true, value: [] };
  const items: unknown[] = [];
  for (const [index, item] of trimmed.split(',').entries()) {
    const coerced = fromText(item.trim(), { kind: itemKind });
    if (!coerced.ok) return { ok: false, error: `item ${index + 1}: ${coerced.error}` };
    items.push(coerced.value);
  }
  return { ok: true, value: items };
}

/** A union takes the first reading its members allow: number, then boolean, then text. */
function unionFromText(text: string, kinds: readonly FieldKind[]): Coerced {
  for (const kind of ['number', 'boolean'] as const) {
    const coerced = kinds.includes(kind) ? fromText(text, { kind }) : undefined;
    if (coerced?.ok) return coerced;
  }
  return kinds.includes('string') || kinds.length === 0
    ? { ok: true, value: text }
    : fromText(text, { kind: kinds[0] ?? 'json' });
}

function jsonFromText(text: string): Coerced {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, error: 'expected JSON' };
  }
}
