/**
 * The pods holding each device (CONTRACT §1.9), as the node's kubelet says through its
 * PodResources API and the agent reports it (agent/pod-resources/): per device `resource_id`
 * (the device plugin's id: `Ascend910-3`, a GPU uuid), the pod and container each allocation
 * went to. The controllers publish them on devices that are not healthy and a per-device drain
 * evicts exactly them (controller/remediation/pods-to-evict.ts, which still refuses pods not
 * on that node or asking for no accelerator: the field says which, never whether).
 *
 * Left out: not known (an older agent, or the kubelet's socket unreadable), distinct from `[]`
 * (known: no device is held). A device the list leaves out is held by nobody.
 */
import { z } from 'zod';
import { SNAPSHOT_LIMITS } from './limits.js';
import { text } from './text.js';

/** A Kubernetes namespace or container name: a DNS label (RFC 1123), at most 63 characters. */
export const DNS_LABEL_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A Kubernetes pod name: a DNS subdomain (RFC 1123), at most 253 characters. */
export const DNS_SUBDOMAIN_PATTERN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const dnsLabel = z
  .string()
  .min(1)
  .max(SNAPSHOT_LIMITS.dnsLabel)
  .regex(DNS_LABEL_PATTERN, 'must be a Kubernetes name (lower-case DNS label)');

/** One container holding a device. */
export const deviceHolderPodSchema = z.object({
  namespace: dnsLabel,
  name: z
    .string()
    .min(1)
    .max(SNAPSHOT_LIMITS.node)
    .regex(DNS_SUBDOMAIN_PATTERN, 'must be a Kubernetes pod name (lower-case DNS subdomain)'),
  container: dnsLabel,
});

/** The containers holding one device: at most SNAPSHOT_LIMITS.holdersPerDevice. */
export const deviceHolderSchema = z.object({
  resource_id: text(SNAPSHOT_LIMITS.id, 1),
  pods: z.array(deviceHolderPodSchema).max(SNAPSHOT_LIMITS.holdersPerDevice),
});

/** The held devices of a payload: at most SNAPSHOT_LIMITS.devices. */
export const deviceHoldersSchema = z.array(deviceHolderSchema).max(SNAPSHOT_LIMITS.devices);

/** One device's holders as validated. */
export type DeviceHolderReading = z.infer<typeof deviceHolderSchema>;
/** One container holding a device. */
export type DeviceHolderPod = z.infer<typeof deviceHolderPodSchema>;
