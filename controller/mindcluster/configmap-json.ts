/**
 * What MindCluster's two ConfigMap readers (device-info.ts, node-info.ts) share: a JSON document
 * under one data key of a ConfigMap named `<prefix><node>`, read whole or refused with a
 * one-line reason naming the field (the `reason` label of the refusal metrics). Pure.
 */
import { NODE_NAME_PATTERN, SNAPSHOT_LIMITS } from '../../contracts/index.js';

/** Why a ConfigMap was refused: the metrics' `reason` label. */
export type RefusalReason = 'integrity' | 'json' | 'shape' | 'oversize';

/** A read's answer: the value, or why it was refused. */
export type ReadResult<K extends string, T> = { [key in K]: T } | { refused: RefusalReason; message: string };

/** Thrown inside a read; `readOrRefuse` turns it into the answer. */
export class Refusal extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** A refusal for a field of the wrong shape: `<field>: <why>`. */
export const shape = (field: string, why: string): Refusal => new Refusal('shape', `${field}: ${why}`);

/** `read()`'s value under `key`, or the refusal it threw (any other error is a bug, rethrown). */
export function readOrRefuse<K extends string, T>(key: K, read: () => T): ReadResult<K, T> {
  try {
    return { [key]: read() } as { [key in K]: T };
  } catch (error) {
    if (error instanceof Refusal) return { refused: error.reason, message: error.message };
    throw error;
  }
}

/**
 * The JSON object under `data[key]` of the ConfigMap `<prefix><node>`: the node name checked,
 * the text bounded by `maxBytes` before it is parsed.
 */
export function jsonObjectOf(
  node: string,
  prefix: string,
  data: Readonly<Record<string, string>>,
  key: string,
  maxBytes: number,
): Record<string, unknown> {
  if (node.length > SNAPSHOT_LIMITS.node || !NODE_NAME_PATTERN.test(node))
    throw shape('metadata.name', `"${node.slice(0, 64)}" after ${prefix} is not a node name`);
  const text = data[key];
  if (text === undefined) throw shape(key, 'missing');
  if (Buffer.byteLength(text, 'utf8') > maxBytes)
    throw new Refusal('oversize', `${key}: more than ${maxBytes} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Refusal('json', `${key}: not JSON (${(error as Error).message})`);
  }
  if (!isObject(parsed)) throw shape(key, 'must be a JSON object');
  return parsed;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
