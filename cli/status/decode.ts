/**
 * The ConfigMap's data as a published document, or the one line saying why it cannot be
 * shown. The major version is checked before anything else; a 3.x document is read for the
 * fields this version knows (the rest is ignored, as the contract asks).
 */
import {
  FAULT_DATA_KEY,
  publishedDocumentSchema,
  PUBLISHED_VERSION,
  type PublishedDocument,
} from '../../contracts/index.js';
import { excerpt } from '../args.js';

/** A decoded document, or the one line saying why it cannot be shown. */
export type Decoded = { document: PublishedDocument } | { error: string };

/**
 * Reads the ConfigMap's data: the `fault.json` key, JSON, a known major version (checked
 * before the schema, so a 4.0 document is reported as such, not as a list of bad fields),
 * then the schema. A 3.x document is validated as 3.0: unknown fields are ignored.
 */
export function decodeStatus(data: Readonly<Record<string, string>> | undefined, where: string): Decoded {
  const text = data?.[FAULT_DATA_KEY];
  if (text === undefined) return { error: `${where} has no ${FAULT_DATA_KEY} key` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { error: `${where}: ${FAULT_DATA_KEY} is not JSON (${(error as Error).message.split('\n')[0]})` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { error: `${where}: ${FAULT_DATA_KEY} is not a JSON object` };
  const version = (raw as { version?: unknown }).version;
  if (typeof version !== 'string')
    return { error: `${where}: ${FAULT_DATA_KEY}: version: missing or not a string` };
  const known = PUBLISHED_VERSION.split('.')[0] as string;
  const major = version.split('.')[0];
  if (major !== known)
    return {
      error:
        `${where}: unknown major version ${excerpt(version)} of ${FAULT_DATA_KEY}; this npu-fault reads ` +
        `${known}.x (upgrade npu-fault to read it)`,
    };
  const parsed = publishedDocumentSchema.safeParse({ ...raw, version: PUBLISHED_VERSION });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = formatPath(issue?.path ?? []);
    return { error: `${where}: ${FAULT_DATA_KEY}: ${field || '(document)'}: ${issue?.message ?? 'invalid'}` };
  }
  return { document: { ...parsed.data, version: version as typeof PUBLISHED_VERSION } };
}

/** `nodes.gpu-1.npus[0].status`. */
function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`))
    .join('');
}
