/**
 * The links check's settings (agent config section `links`).
 */
import { z } from 'zod';
import type { DeepReadonly } from '../../../platform/index.js';
import { absolutePath } from '../config-fields.js';
import { INTERFACE_NAME } from './sysfs.js';

/** An ignore pattern: an interface name, or a prefix ending in `*`. */
const INTERFACE_PATTERN = /^[A-Za-z0-9_.:@-]{1,15}\*?$/;
/** An RDMA device (`mlx5_0`: all its ports) or one port (`mlx5_0/1`). */
const RDMA_PORT = /^[A-Za-z0-9_.-]{1,64}(\/\d{1,3})?$/;

export const linksCheckConfigSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(true)
    .describe('watch NIC and RDMA links (and Ascend RoCE ports through hccn_tool)'),
  intervalMs: z
    .number()
    .int()
    .min(1000)
    .max(3_600_000)
    .default(5000)
    .describe('time between two reads of the links'),
  sysfsRoot: absolutePath()
    .default('/sys')
    .describe(
      "where the host's sysfs is seen: its class/net lists the interfaces of the network namespace that mounted it, so a pod without hostNetwork mounts the host's /sys (e.g. at /host/sys) and names it here",
    ),
  interfaces: z
    .array(
      z.string().regex(INTERFACE_NAME, 'must be an interface name (at most 15 letters, digits, _ . : @ -)'),
    )
    .max(64)
    .default([])
    .describe(
      'NICs to watch from the first read, up or not (one absent is down); empty: auto-detect physical NICs of at least minSpeedMbps once seen up',
    ),
  rdmaPorts: z
    .array(z.string().regex(RDMA_PORT, 'must be an RDMA device (mlx5_0) or a port (mlx5_0/1)'))
    .max(64)
    .default([])
    .describe(
      'RDMA ports (mlx5_0/1) or devices (mlx5_0: all ports) to watch from the first read; empty: auto-detect every RDMA port once seen ACTIVE',
    ),
  ignoreInterfaces: z
    .array(z.string().regex(INTERFACE_PATTERN, 'must be an interface name or a prefix ending in *'))
    .max(64)
    .default([])
    .describe(
      'physical NICs auto-detection leaves out (eth9, ens1f*): e.g. ports handed to pods by SR-IOV or host-device CNI; virtual interfaces are never auto-detected',
    ),
  minSpeedMbps: z
    .number()
    .int()
    .min(0)
    .default(25000)
    .describe('auto-detection watches physical NICs at least this fast (Mb/s, as read while the link is up)'),
  flapThreshold: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(3)
    .describe(
      'a watched link that went down this many times within flapWindowSeconds is a problem (flapping)',
    ),
  flapWindowSeconds: z
    .number()
    .int()
    .min(10)
    .max(86400)
    .default(600)
    .describe('the window flaps are counted in'),
  hccnEnabled: z
    .boolean()
    .default(true)
    .describe("read Ascend NPUs' RoCE port links with hccn_tool, where it is installed"),
  hccnToolPath: absolutePath()
    .default('/usr/local/Ascend/driver/tools/hccn_tool')
    .describe('hccn_tool (`hccn_tool -i <npu> -link -g`); not installed there: no RoCE port is read'),
  hccnDeviceCount: z
    .number()
    .int()
    .min(0)
    .max(64)
    .default(0)
    .describe(
      'NPUs 0..n-1 to read, each watched from the first read; 0: every /dev/davinci<N> of hccnDevDir, each watched once seen UP',
    ),
  hccnDevDir: absolutePath()
    .default('/dev')
    .describe(
      "where the NPUs' device nodes (davinci<N>) are listed, for hccnDeviceCount 0 (the host's /dev in a pod)",
    ),
  hccnIntervalMs: z
    .number()
    .int()
    .min(1000)
    .max(3_600_000)
    .default(30000)
    .describe('time between two hccn_tool rounds (one run per NPU, four at a time)'),
  hccnTimeoutMs: z
    .number()
    .int()
    .min(100)
    .max(60000)
    .default(5000)
    .describe(
      'an hccn_tool round (every NPU, four at a time) taking longer is stopped: runs still going are killed (failed reads), NPUs not reached keep their last state',
    ),
});

/** The links check's settings after defaults. */
export type LinksCheckConfig = DeepReadonly<z.output<typeof linksCheckConfigSchema>>;
