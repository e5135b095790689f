// Lint rule `local/folder-doors`: a folder with an index.ts is entered only through it
// (hono's "one public door per folder"). Importing a file of another folder that has a door
// (or lies inside one that has) is an error naming the door to use instead. Importing from
// one's own folder or a parent folder is free, and tests, test support, benchmarks and the
// demo (`*.test.ts`, `testing.ts`, `test/setup/`, `bench/`, `stack/`) may also use a folder's `testing.ts`
// (builders and fakes kept beside the code they serve).
import { existsSync } from 'node:fs';
import { dirname, basename, relative, resolve, sep } from 'node:path';

function isInside(dir, ancestor) {
  return dir === ancestor || dir.startsWith(ancestor + sep);
}

/**
 * The door a relative import of `target` from `source` must go through, or null if fine.
 * Every index.ts is a door (a nested folder may have its own, as platform/k8s does); any
 * other file inside a folder with a door, imported from outside that folder, is refused, and
 * the nearest door is named.
 */
export function requiredDoor(source, target, isTest) {
  const from = dirname(source);
  const dir = dirname(target);
  if (isInside(from, dir)) return null;
  const file = basename(target);
  if (file === 'index.ts' || (isTest && file === 'testing.ts' && existsSync(resolve(dir, 'index.ts'))))
    return null;
  // Folders from the target's up to (not including) the one the two files share.
  for (let d = dir; !isInside(from, d); d = dirname(d)) {
    if (existsSync(resolve(d, 'index.ts'))) return resolve(d, 'index.ts');
    if (dirname(d) === d) break;
  }
  return null;
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'import another folder only through its index.ts' },
    schema: [],
    messages: { door: "'{{spec}}' is inside {{folder}}/: import {{door}} instead (its public door)" },
  },
  create(context) {
    const source = context.filename;
    // Test support (a folder's own testing.ts) builds on other folders' test support too.
    const parts = source.split(sep);
    const isTest =
      source.endsWith('.test.ts') ||
      basename(source) === 'testing.ts' ||
      parts.includes('bench') ||
      // the demo and the benchmarks' shared stack (never shipped) drives the same fakes
      relative(process.cwd(), source).split(sep)[0] === 'stack' ||
      parts.join('/').includes('/test/setup/');
    function check(node) {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = resolve(dirname(source), spec).replace(/\.js$/, '.ts');
      const door = requiredDoor(source, target, isTest);
      if (door === null) return;
      const rel = relative(dirname(source), door).replace(/\.ts$/, '.js');
      context.report({
        node: node.source,
        messageId: 'door',
        data: {
          spec,
          folder: relative(context.cwd, dirname(door)),
          door: rel.startsWith('.') ? rel : `./${rel}`,
        },
      });
    }
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default { rules: { 'folder-doors': rule } };
