/**
 * The status ConfigMap's content (CONTRACT §5.1): its data keys, its labels, and the
 * document as compact JSON with its size and its content without the timestamp (what the
 * heartbeat rule compares).
 */
import {
  FAULT_DATA_KEY,
  PUBLISHED_VERSION,
  VERSION_DATA_KEY,
  publishedDocumentSchema,
  type PublishedDocument,
} from '../../contracts/index.js';

/** The labels of the status ConfigMap and its mirrors; `managed-by` is how a mirror is known to be ours. */
export const STATUS_LABELS: Readonly<Record<string, string>> = Object.freeze({
  'app.kubernetes.io/name': 'npu-fault',
  'app.kubernetes.io/managed-by': 'npu-fault-controller',
});

/** The label that marks a ConfigMap as written by the controller. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';

/** A ConfigMap's `data` as the controller writes it: `version` and `fault.json`. */
export type StatusData = Readonly<Record<string, string>>;

/** A rendered document, serialised once. */
export interface SerializedDocument {
  readonly document: PublishedDocument;
  /** The ConfigMap data: `{ version: "3.0", "fault.json": <compact JSON> }`. */
  readonly data: StatusData;
  /** UTF-8 bytes of the data values (what etcd stores and watchers receive, near enough). */
  readonly bytes: number;
  /** The JSON with its timestamp blanked: equal content means nothing but time moved. */
  readonly content: string;
}

/** Serialises `document` for writing. */
export function serializeDocument(document: PublishedDocument): SerializedDocument {
  const json = JSON.stringify(document);
  const data = { [VERSION_DATA_KEY]: PUBLISHED_VERSION, [FAULT_DATA_KEY]: json };
  return {
    document,
    data,
    bytes: Buffer.byteLength(json, 'utf8') + Buffer.byteLength(PUBLISHED_VERSION, 'utf8'),
    content: contentOf(json, document.timestamp),
  };
}

/**
 * The document JSON without its timestamp. The top-level `timestamp` is the first key of
 * that name in the text (it precedes `nodes`, and nothing before it holds one).
 */
export function contentOf(json: string, timestamp: string): string {
  return json.replace(`"timestamp":${JSON.stringify(timestamp)}`, '"timestamp":""');
}

/** The content (without timestamp) of stored data, or undefined when it holds no valid document. */
export function contentOfData(data: StatusData | undefined): string | undefined {
  const document = documentOf(data);
  const json = data?.[FAULT_DATA_KEY];
  return document && json !== undefined ? contentOf(json, document.timestamp) : undefined;
}

/**
 * The valid document in stored ConfigMap data, or undefined when there is none (no
 * `fault.json`, not JSON, or not a 3.x document).
 */
export function documentOf(data: StatusData | undefined): PublishedDocument | undefined {
  const json = data?.[FAULT_DATA_KEY];
  if (json === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  const result = publishedDocumentSchema.safeParse(parsed);
  return result.success ? result.data : undefined;
}
