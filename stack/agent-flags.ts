/**
 * Agent flags for agents started on a developer's or CI machine with a real collector (the
 * benchmarks, tests): no node check, so the agent probes no network but loopback (not this
 * machine's gateway) and takes none of this machine's links, memory, kernel log, disks or
 * kubelet (PodResources) as input.
 */
export const WITHOUT_NODE_CHECKS: readonly string[] = [
  '--no-node-checks-network-enabled',
  '--no-node-checks-links-enabled',
  '--node-checks-nvlink-enabled=false',
  '--no-node-checks-edac-enabled',
  '--no-node-checks-kernel-enabled',
  '--no-node-checks-filesystems-enabled',
  '--no-pod-resources-enabled',
];
