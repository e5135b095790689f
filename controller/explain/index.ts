/**
 * `GET /v1/explain/:node[/:device]`: the one door into controller/explain/. Mounted on the
 * observation server's port with `withExplain(explainHandler, observationsHandler)`.
 */
export {
  EXPLAIN_PATH,
  EXPLAIN_RESOURCE,
  EXPLAIN_TOKEN_HEADER,
  createExplainApp,
  withExplain,
  type ExplainAppDeps,
  type ExplainResponse,
} from './app.js';
export { kubeAccessReview, type AccessAttributes, type AccessCheck } from './access-review.js';
