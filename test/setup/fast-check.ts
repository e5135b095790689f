// Property tests explore new random cases on every local run; CI (CI=true) replays a fixed
// seed so a landing is never decided by luck. FC_SEED=<n> reproduces any run's failure
// (fast-check prints the seed with the counterexample).
import fc from 'fast-check';

const seed = process.env.FC_SEED ?? (process.env.CI === 'true' ? '20261129' : undefined);
if (seed !== undefined) fc.configureGlobal({ seed: Number(seed) });
