#!/usr/bin/env node
// Entry point of the `npu-fault` command. The sources are TypeScript; tsx compiles them on
// load so `npx npu-fault …` works right after `npm ci`, with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
