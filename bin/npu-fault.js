#!/usr/bin/env node
// Entry point of the `npu-fault` command: the TypeScript sources through tsx after `npm ci`,
// else the compiled build in dist/ on plain Node (load-main.js). A container image runs
// dist/cli/run.js directly.
import { loadMain } from './load-main.js';

const main = await loadMain();
process.exitCode = await main(process.argv.slice(2));
