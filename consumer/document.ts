/**
 * Reading a published document (CONTRACT §5.2) the way a consumer must: the major version
 * first (same major: read the known fields, drop the rest; another major: refuse and say
 * so), then the shape. Pure: text in, document or error out.
 */
import {
  PUBLISHED_VERSION,
  publishedDocumentSchema,
  publishedNodeSchema,
  type PublishedDocument,
  type PublishedNode,
} from '../contracts/index.js';
import { FollowError } from './types.js';

/** The major version this SDK reads ("3"). */
export const SUPPORTED_MAJOR = majorOf(PUBLISHED_VERSION) ?? '3';

/** The major of a `"3.0"`-style version, or undefined when it is not one. */
export function majorOf(version: unknown): string | undefined {
  if (typeof version !== 'string') return undefined;
  return /^(\d+)(\.\d+)*$/.exec(version.trim())?.[1];
}

/** Refuses a version of another major; undefined when it is readable. */
export function checkVersion(version: unknown, where: string): FollowError | undefined {
  const major = majorOf(version);
  if (major === SUPPORTED_MAJOR) return undefined;
  return new FollowError(
    'version',
    `${where}: version ${JSON.stringify(version)} is not ${SUPPORTED_MAJOR}.x; this consumer reads only major ${SUPPORTED_MAJOR}`,
  );
}

/** Parses `fault.json`; `version` is the ConfigMap's `version` key when there is one. */
export function parseDocument(text: string, version?: string): PublishedDocument | FollowError {
  if (version !== undefined) {
    const refused = checkVersion(version, 'ConfigMap key version');
    if (refused) return refused;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return new FollowError('invalid', `fault.json: not JSON (${(error as Error).message})`, { cause: error });
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return new FollowError('invalid', 'fault.json: expected an object');
  const declared = (raw as { version?: unknown }).version;
  const refused = checkVersion(declared, 'fault.json');
  if (refused) return refused;
  // The contract's schema pins "3.0"; a 3.x document is read as one, keeping its own version.
  const parsed = publishedDocumentSchema.safeParse({ ...raw, version: PUBLISHED_VERSION });
  if (!parsed.success) return new FollowError('invalid', `fault.json: ${firstIssue(parsed.error.issues)}`);
  return { ...parsed.data, version: declared as PublishedDocument['version'] };
}

/** Parses one node entry (the agent stream's `entry`); null stays null (healthy). */
export function parseEntry(raw: unknown): PublishedNode | null | FollowError {
  if (raw === null || raw === undefined) return null;
  const parsed = publishedNodeSchema.safeParse(raw);
  if (!parsed.success) return new FollowError('invalid', `entry: ${firstIssue(parsed.error.issues)}`);
  return parsed.data;
}

function firstIssue(issues: readonly { path: PropertyKey[]; message: string }[]): string {
  const issue = issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.map(String).join('.');
  return `${path || '(root)'}: ${issue.message}`;
}
