/**
 * `GET /v1/explain/:node[/:device]`: the one door into controller/explain/. Mounted on the
 * observation server's port with `withExplain(explainHandler, observationsHandler)`.
 */
export {
  EXPLAIN_PATH,
  EXPLAIN_SERVICE_ACCOUNT,
  EXPLAIN_TOKEN_AUDIENCE,
  EXPLAIN_TOKEN_HEADER,
  createExplainApp,
  explainUser,
  withExplain,
  type ExplainAppDeps,
  type ExplainResponse,
} from './app.js';
