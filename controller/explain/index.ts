/**
 * `GET /v1/explain/:node[/:device]`: the one door into controller/explain/. Mounted on the
 * observation server's port with `withExplain(explainHandler, observationsHandler)`. The
 * request and the answer are the contract's (contracts/explain.ts).
 */
export { createExplainApp, explainUser, withExplain, type ExplainAppDeps } from './app.js';
/** The audience the controller's token check takes for explain (defined in contracts/). */
export { EXPLAIN_TOKEN_AUDIENCE } from '../../contracts/index.js';
