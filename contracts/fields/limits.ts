/**
 * The snapshot's bounds, named once: the schemas (the envelope in contracts/snapshot.ts, the
 * families' payloads in families/) and the hot path's hand-written readers both read them.
 */
export const SNAPSHOT_LIMITS = {
  /** Longest node name (a DNS subdomain). */
  node: 253,
  /** Longest boot_id, device name, GPU uuid. */
  id: 128,
  /** Longest collector and driver_version. */
  label: 64,
  /** Longest health word. */
  health: 32,
  /** Longest PCI bus id. */
  busId: 64,
  /** Most fault codes of one device. */
  errorCodes: 256,
  /** Most XID events of one GPU. */
  xidEvents: 1024,
  /** Most chips of one 310P card. */
  chips: 8,
  /** Most devices (NPUs, cards, GPUs) of one payload. */
  devices: 512,
  /** Largest consecutive_failures of a canary. */
  canaryFailures: 1_000_000_000,
  /** Most node problems of one payload. */
  nodeProblems: 32,
  /** Longest node problem message. */
  problemMessage: 256,
  /** Most pods (containers) holding one device (device_holders). */
  holdersPerDevice: 32,
  /** Longest namespace or container name (a DNS label). */
  dnsLabel: 63,
} as const;
