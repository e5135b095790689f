/**
 * The entry point of a compiled build (`npm run build`, then `node dist/cli/run.js <command>`),
 * as a container image runs it: no TypeScript loader in the process, so less memory than
 * `bin/npu-fault.js` (which compiles the sources on load through tsx).
 */
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
