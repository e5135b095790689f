/**
 * Writes the JSON Schemas of the three documents people and tools exchange with npu-fault,
 * generated from the zod schemas that the code itself validates with (so the two cannot
 * disagree): `contracts/json-schema/{snapshot,published,rules}.schema.json`.
 *
 *   npm run schemas     (node --import tsx hack/emit-json-schemas.ts)
 *
 * Every schema is emitted for `io: 'input'`, the document as written on the wire or on disk:
 * fields with a default are optional, and objects the code strips of unknown keys stay
 * open (a v3.1 producer may add fields without breaking a v3.0 consumer's validator);
 * only the rules file is closed, because its zod schema is strict (a misspelt key must fail).
 * hack/emit-json-schemas.test.ts regenerates them and fails when the committed files drift.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { publishedDocumentSchema, rulesSchema, snapshotSchema } from '../contracts/index.js';

/** Where the generated files live, relative to the repository root. */
export const SCHEMA_DIR = 'contracts/json-schema';

/** Base of every schema's `$id`. */
export const SCHEMA_BASE_URL = 'https://npu-fault.io/schemas/';

/** One emitted schema. */
export interface SchemaSpec {
  file: string;
  title: string;
  description: string;
  schema: z.ZodType;
}

/** The schemas `npm run schemas` writes, in order. */
export const SCHEMAS: readonly SchemaSpec[] = [
  {
    file: 'snapshot.schema.json',
    title: 'hdc.health/v1 snapshot',
    description:
      'One sample of every accelerator on one node, as an agent POSTs it to /v1/snapshots (CONTRACT §1).',
    schema: snapshotSchema,
  },
  {
    file: 'published.schema.json',
    title: 'npu-fault published status document (fault.json, version 3.0)',
    description: 'The fault.json key of ConfigMap ai-infra/npu-fault-status-v3 (CONTRACT §3).',
    schema: publishedDocumentSchema,
  },
  {
    file: 'rules.schema.json',
    title: 'npu-fault detection rules',
    description: 'The rules file: every detection threshold of CONTRACT §2, each with its default.',
    schema: rulesSchema,
  },
];

/** Renders one schema as the text of its file: 2-space JSON with `$id` and `title` first. */
export function renderSchema(spec: SchemaSpec): string {
  const { $schema, ...body } = z.toJSONSchema(spec.schema, {
    io: 'input',
    unrepresentable: 'throw',
  }) as Record<string, unknown>;
  const document = {
    $schema,
    $id: `${SCHEMA_BASE_URL}${spec.file}`,
    title: spec.title,
    description: spec.description,
    ...body,
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

/** Every schema file's name and text. */
export function renderSchemas(): Map<string, string> {
  return new Map(SCHEMAS.map((spec) => [spec.file, renderSchema(spec)]));
}

async function main(): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  for (const [file, text] of renderSchemas()) {
    await writeFile(`${root}${SCHEMA_DIR}/${file}`, text);
    process.stdout.write(`wrote ${SCHEMA_DIR}/${file}\n`);
  }
}

// Run only as a script (`npm run schemas`), not when the test imports the renderers.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
