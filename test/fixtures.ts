/**
 * The shared samples (../shared/fixtures beside the repository), for tests that read them
 * in place: they are never copied into the repository. One place knows where they lie.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** `../shared/fixtures/` as a path with a trailing slash. */
export const SHARED_FIXTURES_DIR = fileURLToPath(new URL('../../shared/fixtures/', import.meta.url));
/** `../shared/fixtures/real/`: verbatim public tool outputs (see SOURCES.md there). */
export const REAL_FIXTURES_DIR = `${SHARED_FIXTURES_DIR}real/`;

/** The text of one real tool output. */
export function readRealFixture(name: string): string {
  return readFileSync(REAL_FIXTURES_DIR + name, 'utf8');
}

/** One of the example snapshots (`snapshot-910b.json`, …), parsed. */
export function readSharedJson(name: string): unknown {
  return JSON.parse(readFileSync(SHARED_FIXTURES_DIR + name, 'utf8'));
}
