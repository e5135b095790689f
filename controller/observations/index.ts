/**
 * The observation endpoint, `POST /v1/observations`: the one door into controller/observations/.
 *
 * ```ts
 * const reviewer = createTokenReviewer({ review: kubeTokenReview(kc.makeApiClient(k8s.AuthenticationV1Api)), clock });
 * const handler = createObservationsApp(
 *   {
 *     authenticate: reviewer.authenticate,
 *     accept: (snapshots, now) => snapshots.map((s) => engine.observe(s, now)),
 *     entryFor: (node) => engine.nodeEntry(node),
 *     leadership: () => elector.leadership(),
 *     identity: elector.identity,
 *     leaderIdentity: () => elector.leader(),
 *     clock, log, registry,
 *   },
 *   { allowedUsers: config.auth.allowedUsers },
 * );
 * createHttpServer({ name: 'observations', port: 8080, log, handler });
 * ```
 *
 * The wire contract (request and response schemas) is contracts/observations.ts, which the
 * ingest function imports as well.
 */
export {
  DEFAULT_ALLOWED_USERS,
  DEFAULT_MAX_BODY_BYTES,
  createObservationsApp,
  type AcceptResult,
  type ObservationsAppDeps,
  type ObservationsAppOptions,
} from './app.js';
export {
  InvalidBodyError,
  findPollutingKey,
  jsonPointer,
  observationsLimit,
  parseObservationsBody,
  type ObservationsLimit,
} from './validate.js';
