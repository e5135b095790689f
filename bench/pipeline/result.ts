/**
 * The pipeline benchmark's result (`bench/results/<timestamp>.json`): what one run of
 * `npm run bench -- pipeline` measured, per fleet size N, plus the baselines. Every latency
 * is in milliseconds; raw samples are kept so the report can draw CDFs and anyone can
 * recompute a quantile.
 */

/** The latency paths measured per fault (each one a CDF in the report). */
export const PATHS = [
  /** Fault injected → the snapshot carrying it leaves the agent (1 Hz sampling, or at once for a kernel-log event). */
  'injected_to_sent',
  /** Snapshot sent → the function's answer (function: auth, validation, fan-out; leader: accepted). */
  'sent_to_answered',
  /** collected_at → status write acknowledged, from the leader's own histogram (failures only). */
  'collected_to_written',
  /** collected_at → an API watcher of the ConfigMap sees the device failed. */
  'collected_to_watch',
  /** Fault injected → an API watcher of the ConfigMap sees the device failed (end to end, 1 Hz sampling). */
  'injected_to_watch',
  /** Kernel-log event (a GPU XID) injected → an API watcher sees the device failed. */
  'event_to_watch',
  /** Fault injected → a watcher of Nodes sees the node cordoned and tainted (remediation in cordon mode). */
  'injected_to_cordon',
  /** An API watcher sees the device failed → a watcher of Nodes sees its node cordoned. */
  'watch_to_cordon',
  /** Fault injected → the node's agent SSE stream (/v1/fault/stream) carries the failure. */
  'injected_to_sse',
  /** The first watcher saw the write → each of the other watchers saw it (fan-out delay). */
  'watch_fanout',
  /** The write was seen by the first watcher → the node's SSE stream carried it (negative: SSE first). */
  'watch_to_sse',
] as const;
export type PathName = (typeof PATHS)[number];

/** Quantiles of one path (ms); NaN-free: an empty path has count 0 and null quantiles. */
export interface PathSummary {
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

/** What one process cost over the measured window. */
export interface ComponentUsage {
  /** controller-1, controller-2, function, fleet (the load generator), kube-apiserver, etcd, … */
  name: string;
  cpuSeconds: number;
  /** cpuSeconds / window: 1.0 is one core busy. */
  cpuShareOfOneCore: number;
  rssMiBPeak: number;
  /** Node components only: the worst event-loop delay p99 sampled in the window. */
  eventLoopDelayP99MsMax: number | null;
}

/** API watchers of the status ConfigMap, and what the apiserver sent them. */
export interface WatcherLoad {
  watchers: number;
  /** Seconds this watcher count was held. */
  seconds: number;
  /** Bytes the apiserver sent to watchers of configmaps (apiserver_watch_events_sizes_sum delta) per second. */
  egressBytesPerSecond: number;
  /** What the watchers received: each status version's document size times the watchers it reached, per second. */
  deliveredDocumentBytesPerSecond?: number;
  /** Watch events sent per second (apiserver_watch_events_total delta). */
  eventsPerSecond: number;
  /** Write acknowledged (first watcher) → every watcher has it. */
  fanout: PathSummary;
}

/** The lossless check: the leader's recorded observations replayed against the published transitions. */
export interface LosslessCheck {
  published: number;
  replayed: number;
  lost: number;
  duplicated: number;
  /** Replayed statuses shorter than one publish interval, merged away (not a loss). */
  merged: number;
  /** Lost and duplicated by the status changed to: a lost `failed` is a lost fault. */
  lostByStatus?: Record<string, number>;
  duplicatedByStatus?: Record<string, number>;
  details: string[];
}

/** One fleet size. */
export interface RunResult {
  nodes: number;
  devices: number;
  measuredSeconds: number;
  /** The measured window (ISO times): CPU profiles are cut to it (bench/profile-summary.ts). */
  window?: { from: string; to: string };
  /** Snapshots the synthetic agents posted per second over the window. */
  snapshotsPerSecond?: number;
  /** Machine CPU busy over the window (0..1); above 0.85 the run is saturated and not quoted. */
  machineBusy: number;
  saturated: boolean;
  faults: {
    injected: number;
    /** Injected faults the watcher saw as failed. */
    seenFailed: number;
    /** Injected faults never seen failed: must be 0. */
    missed: number;
    /** Devices published failed that no fault was injected on (glitch noise): must be 0. */
    falseFailed: number;
  };
  /** What the synthetic agents did: requests, failures, snapshots dropped from a full queue, glitches. */
  fleet?: {
    posts: number;
    failedPosts: number;
    dropped: number;
    statuses: Record<string, number>;
    glitches: { spikes: number; ecc: number; skipped: number };
  };
  latency: Record<PathName, PathSummary>;
  /** The raw samples behind `latency`, for CDFs (collected_to_written is a histogram: none). */
  samples: Partial<Record<PathName, number[]>>;
  components: ComponentUsage[];
  api: {
    statusWritesPerSecond: number;
    statusBytesPerSecond: number;
    /** Every write the apiserver served, all clients (apiserver_request_total, verbs that write). */
    allWritesPerSecond: number;
  };
  watchers: WatcherLoad[];
  lossless: LosslessCheck;
}

/** A baseline path on the same faults and clock. */
export interface BaselineResult {
  name: string;
  /** Its configuration, stated. */
  configuration: Record<string, string | number>;
  latency: PathSummary;
  samples: number[];
  /** Faults injected / seen / never seen. */
  injected: number;
  seen: number;
  missed: number;
  /** Anything else it showed (aggregation, rate limits, expiry, …), in words and figures. */
  findings: Record<string, string | number>;
  /**
   * The pipeline in the same run, on the same faults and clock (a baseline that runs beside
   * it): its end-to-end latency, and whether the baseline's own cost saturated the machine
   * (which slows the pipeline: the ratio is then a lower bound).
   */
  sameRun?: { nodes: number; machineBusy: number; saturated: boolean; pipeline: PathSummary };
  /**
   * Why its latency is not set against the pipeline's end to end (it times another thing:
   * delivery only, or node loss); the report then shows this instead of a verdict.
   */
  notComparable?: string;
}

/** The whole file. */
export interface BenchResult {
  kind: 'npu-fault-pipeline-bench';
  startedAt: string;
  finishedAt: string;
  machine: { cpus: number; model: string; node: string; memoryGiB: number };
  command: string;
  /** Targets from the issue, for the report's pass/miss column. */
  targets: Record<string, number>;
  runs: RunResult[];
  baselines: BaselineResult[];
  /** Where latency starts to climb, in words (computed from the runs). */
  knee: string;
  /** What went wrong on the way (a baseline that could not run), in words. */
  notes?: string[];
}
