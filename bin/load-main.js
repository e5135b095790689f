// How the `npu-fault` executables find the command line's `main`. In a checkout after
// `npm ci`, tsx (a development dependency) compiles the TypeScript sources on load, so no
// build step is needed. Where development dependencies are left out (`npm ci --omit=dev`, a
// production install) it runs the compiled build (`npm run build`: dist/) on plain Node.
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The package's root, through symlinks (a link to a bin/ file on PATH finds its sources). */
const root = join(dirname(realpathSync(fileURLToPath(import.meta.url))), '..');

/** `main` of cli/main.ts (through tsx) or of dist/cli/main.js. */
export async function loadMain() {
  let tsx;
  try {
    tsx = await import('tsx/esm/api');
  } catch (error) {
    // Only an absent tsx means "no sources loader"; any other failure is a real one.
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
  }
  if (tsx) {
    tsx.register();
    return (await import(pathToFileURL(join(root, 'cli/main.ts')).href)).main;
  }
  const built = join(root, 'dist/cli/main.js');
  if (!existsSync(built)) {
    process.stderr.write(
      'npu-fault: no tsx to load the sources and no build in dist/: run `npm ci` or `npm run build`\n',
    );
    process.exit(1);
  }
  return (await import(pathToFileURL(built).href)).main;
}
