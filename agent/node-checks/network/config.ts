/**
 * The network check's settings (its section of the agent's config). The defaults are the
 * operators' practice: every 5 s, three misses in a row.
 */
import { z } from 'zod';
import type { DeepReadonly } from '../../../platform/index.js';
import { parseEndpoint } from './targets.js';

/** The most `targets` (each is one connection attempt per interval). */
export const MAX_NETWORK_TARGETS = 16;

/** The network check's settings: a `z.strictObject` with a default for every field. */
export const networkCheckConfigSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        'probe the default gateway, the API server and `targets` over TCP; off: nothing is probed or read',
      ),
    intervalMs: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(5000)
      .describe('time between probe rounds (one connection attempt per target each)'),
    misses: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(3)
      .describe(
        'probes missed in a row that make a target unreachable (network-unreachable); one answer clears it',
      ),
    timeoutMs: z
      .number()
      .int()
      .min(10)
      .max(60_000)
      .default(2000)
      .describe('a connection attempt without an answer this long is a miss (below intervalMs)'),
    gateway: z
      .boolean()
      .default(true)
      .describe('probe the gateway of the default route read from routeTable'),
    gatewayPort: z
      .number()
      .int()
      .min(1)
      .max(65535)
      .default(53)
      .describe(
        'the TCP port the gateway probe connects to: an accepted or refused (RST) connection is an answer',
      ),
    gatewayNeighbour: z
      .boolean()
      .default(true)
      .describe(
        'a gateway that drops the probe silently still answers when its neighbour (ARP) entry in neighbourTable is complete right after the attempt',
      ),
    routeTable: z
      .string()
      .min(1)
      .default('/proc/net/route')
      .describe(
        "the IPv4 routing table read for the default route: /proc/net/route is the agent's own network namespace (its pod's); /proc/1/net/route, with hostPID, the node's",
      ),
    neighbourTable: z
      .string()
      .min(1)
      .default('/proc/net/arp')
      .describe(
        'the IPv4 neighbour table read for the gateway’s entry: the same namespace as routeTable (/proc/1/net/arp for the node’s)',
      ),
    apiServer: z
      .boolean()
      .default(true)
      .describe(
        'probe the API server at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT (the kubelet sets them in every pod); skipped where they are unset',
      ),
    targets: z
      .array(
        z.string().superRefine((value, ctx) => {
          const parsed = parseEndpoint(value);
          if ('error' in parsed)
            ctx.addIssue({ code: 'custom', message: `"${value.slice(0, 80)}": ${parsed.error}` });
        }),
      )
      .max(MAX_NETWORK_TARGETS)
      .default([])
      .describe(
        'more endpoints to probe, host:port or [host]:port with IP addresses (a ToR switch, a storage head); any of them unreachable is network-unreachable',
      ),
  })
  .superRefine((config, ctx) => {
    if (config.timeoutMs >= config.intervalMs)
      ctx.addIssue({
        code: 'custom',
        path: ['timeoutMs'],
        message: `must be below intervalMs (${config.intervalMs} ms): an attempt ends before the next round`,
      });
    if (new Set(config.targets).size !== config.targets.length)
      ctx.addIssue({ code: 'custom', path: ['targets'], message: 'lists an endpoint twice' });
  });

/** The network check's settings after defaults (as loadConfig returns them). */
export type NetworkCheckConfig = DeepReadonly<z.output<typeof networkCheckConfigSchema>>;
