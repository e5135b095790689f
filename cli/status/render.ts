/**
 * The published document as a person reads it (`-o table|wide`) or as JSON (`-o json`): a
 * summary line (the publisher, its term, the document's age, how many nodes need attention),
 * then nodes and devices worst first. A node absent from `nodes` is healthy, unless the
 * document left nodes out (an ingest outage, the byte budget): then it is unknown (§5.3,
 * contracts/published-health.ts, the rules every reader follows).
 */
import {
  leavesNodesOut,
  nodeHealth,
  type PublishedDocument,
  type PublishedNode,
} from '../../contracts/index.js';
import { documentAge, formatAge, isStale } from './age.js';
import type { StatusOutput } from './args.js';
import { compareNatural, needsAttention, nodeStatus, sortDevices, sortNodes } from './order.js';
import { cell, paint, table, type Cell } from './table.js';

/** How to render: the clock, colour, what to show. */
export interface RenderOptions {
  output: StatusOutput;
  node: string | undefined;
  /** Milliseconds since the epoch. */
  now: number;
  color: boolean;
  staleAfterMs: number;
}

/** The summary line. */
export function summaryLine(document: PublishedDocument, now: number): string {
  const listed = Object.values(document.nodes);
  const attention = listed.filter(needsAttention).length;
  const { identity, term } = document.publisher;
  const nodes = `${document.node_count} node${document.node_count === 1 ? '' : 's'}`;
  const verb = attention === 1 ? 'needs' : 'need';
  return (
    `publisher ${identity} (term ${term}), written ${formatAge(documentAge(document, now))} ago; ` +
    `${attention} of ${nodes} ${verb} attention`
  );
}

const orDash = (value: number | string | null, unit = ''): string =>
  value === null ? '-' : `${value}${unit}`;

function nodeRows(nodes: readonly PublishedNode[], now: number): Cell[][] {
  const header = ['NODE', 'STATUS', 'AGENT', 'FAILED', 'UNKNOWN', 'DEGRADED', 'DEVICES', 'OBSERVED'].map(
    (h) => cell(h),
  );
  return [
    header,
    ...nodes.map((node) => {
      const status = nodeStatus(node);
      const { summary } = node;
      return [
        cell(node.node),
        cell(status, status),
        cell(node.agent, node.agent === 'ok' ? undefined : 'warn'),
        cell(String(summary.failed)),
        cell(String(summary.unknown)),
        cell(String(summary.degraded)),
        cell(String(summary.total)),
        cell(`${formatAge(now - Date.parse(node.observed_at))} ago`),
      ];
    }),
  ];
}

function deviceRows(nodes: readonly PublishedNode[], now: number, wide: boolean): Cell[][] {
  const header = ['NODE', 'DEVICE', 'STATUS', 'SINCE', 'REASON'];
  if (wide) header.push('REASONS', 'SIGNALS', 'TEMP', 'POWER', 'ECC', 'LINK', 'MODEL', 'KEY', 'PODS');
  const rows: Cell[][] = [header.map((h) => cell(h))];
  for (const node of nodes) {
    for (const device of sortDevices(node.npus)) {
      const row = [
        cell(node.node),
        cell(device.id),
        cell(device.status, device.status),
        cell(`${formatAge(now - Date.parse(device.since))} ago`),
        cell(device.reason ?? '-'),
      ];
      if (wide)
        row.push(
          cell(device.reasons.join(',') || '-'),
          cell(device.signals.join(',') || '-'),
          cell(orDash(device.temperature_c, '°C')),
          cell(orDash(device.power_w, 'W')),
          cell(orDash(device.ecc_errors)),
          cell(orDash(device.pcie_link_status), device.pcie_link_status === 'down' ? 'failed' : undefined),
          cell(device.model || '-'),
          cell(device.key),
          cell(podsCell(device.pods)),
        );
      rows.push(row);
    }
  }
  return rows;
}

/** The pods holding a device: `-` when not known, `none` when known to be none, a few then a count. */
function podsCell(pods: readonly string[] | undefined, max = 3): string {
  if (pods === undefined) return '-';
  if (pods.length === 0) return 'none';
  const shown = pods.slice(0, max).join(',');
  return pods.length > max ? `${shown} +${pods.length - max} more` : shown;
}

/**
 * What `--node X` shows for a node absent from `nodes`: healthy, not yet observed, or unknown
 * when the document left nodes out (contracts' nodeHealth).
 */
export function unlistedNode(
  document: PublishedDocument,
  node: string,
): { node: string; listed: false; status: 'healthy' | 'unobserved' | 'unknown' } {
  const status = nodeHealth(document, node);
  return {
    node,
    listed: false,
    status: status === 'unobserved' || status === 'healthy' ? status : 'unknown',
  };
}

/** The text for stdout: the document (or one node of it) as the options ask. */
export function renderStatus(document: PublishedDocument, options: RenderOptions): string {
  const { now, color, node } = options;
  if (options.output === 'json') {
    if (node === undefined) return `${JSON.stringify(document, null, 2)}\n`;
    const entry = Object.hasOwn(document.nodes, node) ? document.nodes[node] : undefined;
    return `${JSON.stringify(entry ?? unlistedNode(document, node), null, 2)}\n`;
  }
  const lines: string[] = [];
  const summary = summaryLine(document, now);
  lines.push(
    `${isStale(document, now, options.staleAfterMs) ? paint(`${summary} (STALE)`, 'warn', color) : summary}\n`,
  );
  if (document.ingest_degraded)
    lines.push(
      `${paint(`ingest degraded: ${document.ingest_degraded.stale_nodes} nodes stale at once; those holding no failed or degraded device are not listed, and a node not listed is unknown`, 'warn', color)}\n`,
    );
  if (document.omitted_nodes !== undefined)
    lines.push(
      `${paint(`${document.omitted_nodes} nodes left out to fit the document's size budget; a node not listed is unknown`, 'warn', color)}\n`,
    );
  let nodes = sortNodes(Object.values(document.nodes));
  if (node !== undefined) {
    nodes = nodes.filter((entry) => entry.node === node);
    if (nodes.length === 0) {
      const unlisted = unlistedNode(document, node);
      lines.push(
        unlisted.status === 'unobserved'
          ? `node ${node}: no snapshot yet (unobserved): its status is not known\n`
          : unlisted.status === 'unknown'
            ? `node ${node}: ${paint('unknown', 'unknown', color)} (not listed, and the document left nodes out: it may be one of them)\n`
            : `node ${node}: ${paint('healthy', 'healthy', color)} (not listed: every device is healthy, or it has no accelerators)\n`,
      );
      return lines.join('');
    }
  } else {
    const { cluster_summary: s } = document;
    lines.push(
      `devices: ${s.total} total, ${s.failed} failed, ${s.unknown} unknown, ${s.degraded} degraded, ${s.healthy} healthy\n`,
    );
  }
  if (nodes.length === 0)
    lines.push(
      leavesNodesOut(document)
        ? `${paint('no node is listed, and the nodes left out are unknown', 'unknown', color)}\n`
        : `${paint('every observed node is healthy', 'healthy', color)}\n`,
    );
  else {
    lines.push('\n', table(nodeRows(nodes, now), color));
    const devices = deviceRows(nodes, now, options.output === 'wide');
    if (devices.length > 1) lines.push('\n', table(devices, color));
  }
  if (node === undefined && document.unobserved.length > 0)
    lines.push(
      `\nunobserved (no snapshot yet): ${[...document.unobserved].sort(compareNatural).join(', ')}\n`,
    );
  return lines.join('');
}
