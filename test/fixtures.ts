/**
 * Where test inputs lie, in one place.
 *
 * - The project's own example snapshots (`docs/examples/`) ship with the repository: tests
 *   and docs may always use them.
 * - The real tool outputs (`../shared/fixtures/real/` beside the repository) are an extra
 *   that only the project's developers have; they are read in place and never copied in.
 *   Tests that need them are declared with `describeWithRealFixtures`, which skips them,
 *   saying why in the test's title, when the folder is absent; the run's closing line says
 *   it once more (test/setup/summary-reporter.mjs).
 */
import { describe } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** `docs/examples/`: the project's own example snapshots, with a trailing slash. */
export const EXAMPLES_DIR = fileURLToPath(new URL('../docs/examples/', import.meta.url));
/** `../shared/fixtures/` as a path with a trailing slash (may not exist). */
export const SHARED_FIXTURES_DIR = fileURLToPath(new URL('../../shared/fixtures/', import.meta.url));
/** `../shared/fixtures/real/`: verbatim public tool outputs (see SOURCES.md there). */
export const REAL_FIXTURES_DIR = `${SHARED_FIXTURES_DIR}real/`;
/** True when the real tool outputs are beside the repository. */
export const HAVE_REAL_FIXTURES = existsSync(REAL_FIXTURES_DIR);
/** The suffix a skipped suite's title carries, saying why it was skipped. */
export const SKIPPED_WITHOUT_SHARED = '[skipped: ../shared/fixtures/real/ is not beside the repository]';

/**
 * `describe` for tests that read the real tool outputs: runs them when the folder exists,
 * otherwise registers them as skipped with the reason in the title.
 */
export function describeWithRealFixtures(title: string, body: () => void): void {
  if (HAVE_REAL_FIXTURES) describe(title, body);
  else describe.skip(`${title} ${SKIPPED_WITHOUT_SHARED}`, body);
}

/** The text of one real tool output (only inside `describeWithRealFixtures`). */
export function readRealFixture(name: string): string {
  return readFileSync(REAL_FIXTURES_DIR + name, 'utf8');
}

/** The path of one of the project's example snapshots (`snapshot-910b.json`, …). */
export function examplePath(name: string): string {
  return EXAMPLES_DIR + name;
}

/** One of the project's example snapshots (`snapshot-910b.json`, …), parsed. */
export function readExampleJson(name: string): unknown {
  return JSON.parse(readFileSync(EXAMPLES_DIR + name, 'utf8'));
}
