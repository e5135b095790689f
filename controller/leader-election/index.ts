/**
 * Leader election for the controller: the one door into controller/leader-election/.
 *
 * ```ts
 * const elector = createLeaderElector(
 *   { client: createKubeLeaseClient(kc.makeApiClient(k8s.CoordinationV1Api)), clock, log, registry },
 *   { identity: podName, config: config.lease, callbacks: { onStartedLeading, onStoppedLeading, onNewLeader } },
 * );
 * // run it with the other Runnables; every write path checks the fence first:
 * const lead = elector.leadership();
 * if (lead.leading) publish({ publisher: { identity: elector.identity, term: lead.term } });
 * ```
 *
 * Tests of other folders get the in-memory FakeLeaseClient from `./testing.js`.
 */
export {
  DEFAULT_LEASE,
  JITTER_FACTOR,
  leaderElectionConfigSchema,
  parseLeaderElectionConfig,
  type LeaderElectionConfig,
  type LeaderElectionConfigInput,
} from './config.js';
export { createKubeLeaseClient } from './kube-lease-client.js';
export {
  createLeaderElector,
  type LeaderCallbacks,
  type LeaderElector,
  type LeaderElectorDeps,
  type LeaderElectorOptions,
  type Leadership,
} from './leader-elector.js';
export {
  describeLease,
  type LeaseClient,
  type LeaseKey,
  type LeaseSpec,
  type StoredLease,
} from './lease-client.js';
