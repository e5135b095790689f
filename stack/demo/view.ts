/**
 * The pipeline demo's terminal output: a live grid of the published status (a coloured cell
 * per device, which replica leads) redrawn under a scrolling log on a terminal, and plain
 * lines (changes only) when stdout is not one; then the report table.
 */
import type { PublishedDocument } from '../../contracts/index.js';
import type { SimNode } from '../../core/sim/index.js';
import { deviceStatus, type Expectation } from './scenario.js';

const COLOURS: Record<string, string> = { healthy: '32', degraded: '33', failed: '1;31', unknown: '35' };

/** ANSI colour, or plain text when colour is off. */
export type Paint = (code: string, text: string) => string;
export const painter =
  (colour: boolean): Paint =>
  (code, text) =>
    colour ? `\x1b[${code}m${text}\x1b[0m` : text;

/** `+12.3s` after `start`. */
export const since = (start: number, at: number): string => `+${((at - start) / 1000).toFixed(1)}s`;

/** The live view. */
export class LiveView {
  #gridLines = 0;
  #statuses = new Map<string, string>();
  #leader = '';
  #doc: PublishedDocument | undefined;

  constructor(
    private readonly fleet: readonly SimNode[],
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
    private readonly paint: Paint,
    private readonly start: () => number,
  ) {}

  /** A line of the log (above the grid on a terminal). */
  log(line: string): void {
    this.#clearGrid();
    this.write(`${this.paint('2', `[${since(this.start(), Date.now())}]`)} ${line}\n`);
    this.#drawGrid();
  }

  /** A new published document: changed devices and leaders become log lines. */
  document(doc: PublishedDocument): void {
    this.#doc = doc;
    const lines: string[] = [];
    const leader = `${doc.publisher.identity} (term ${doc.publisher.term})`;
    if (leader !== this.#leader) {
      lines.push(`leader: ${this.paint('1', leader)}`);
      this.#leader = leader;
    }
    // Changes grouped per node and transition, so a node coming up is one line, not eight.
    const groups = new Map<
      string,
      { node: string; from: string; to: string; reason: string; ids: string[] }
    >();
    for (const node of this.fleet) {
      const entry = doc.nodes[node.name];
      const unobserved = doc.unobserved.includes(node.name);
      for (const d of node.devices) {
        const key = `${node.name}/${d.id}`;
        const status = unobserved ? 'unknown' : deviceStatus(entry, d.id);
        const before = this.#statuses.get(key) ?? 'unknown';
        if (status === before) continue;
        this.#statuses.set(key, status);
        const reason = entry?.npus.find((n) => n.id === d.id)?.reason ?? '';
        const group = `${node.name}|${before}|${status}|${reason}`;
        const g = groups.get(group) ?? { node: node.name, from: before, to: status, reason, ids: [] };
        g.ids.push(d.id);
        groups.set(group, g);
      }
    }
    const comingUp = [...groups.values()].filter((g) => g.from === 'unknown' && g.to === 'healthy');
    if (comingUp.length > 1) {
      const devices = comingUp.reduce((n, g) => n + g.ids.length, 0);
      lines.push(
        `${devices} devices on ${comingUp.length} nodes ${this.#cell('unknown', 'unknown')} -> ${this.#cell('healthy', 'healthy')}`,
      );
    }
    for (const g of groups.values()) {
      if (comingUp.length > 1 && comingUp.includes(g)) continue;
      const size = this.fleet.find((n) => n.name === g.node)?.devices.length;
      const ids = g.ids.length === size && size > 3 ? `all ${size}` : g.ids.join(' ');
      lines.push(`${`${g.node} ${ids}`.padEnd(30)} ${this.#transition(g.from, g.to)} ${g.reason}`.trimEnd());
    }
    if (lines.length === 0 && this.tty) {
      this.#clearGrid();
      this.#drawGrid();
    }
    for (const line of lines) this.log(line);
  }

  /** Leaves the grid on screen as it is. */
  close(): void {
    this.#gridLines = 0;
  }

  #transition(from: string, to: string): string {
    return `${this.#cell(from, from.padStart(8))} -> ${this.#cell(to, to.padEnd(8))}`;
  }

  #cell(status: string, text: string): string {
    return this.paint(COLOURS[status] ?? '2', text);
  }

  #clearGrid(): void {
    if (!this.tty || this.#gridLines === 0) return;
    this.write(`\x1b[${this.#gridLines}A\x1b[0J`);
    this.#gridLines = 0;
  }

  #drawGrid(): void {
    if (!this.tty || !this.#doc) return;
    const rows = this.fleet.map((node) => {
      const cells = node.devices
        .map((d) => this.#cell(this.#statuses.get(`${node.name}/${d.id}`) ?? 'unknown', '●'))
        .join('');
      return `  ${node.name.padEnd(18)} ${node.kind.padEnd(6)} ${cells}`;
    });
    const legend = ['healthy', 'degraded', 'failed', 'unknown']
      .map((s) => this.#cell(s, `● ${s}`))
      .join('  ');
    const lines = [
      this.paint('2', '  ---- published status (ConfigMap) ----'),
      ...rows,
      `  leader ${this.paint('1', this.#leader)}   ${legend}`,
    ];
    this.write(`${lines.join('\n')}\n`);
    this.#gridLines = lines.length;
  }
}

/** One report row: an expectation (or the leader kill) and when each consumer saw it. */
export interface ReportRow {
  text: string;
  expectation: Pick<Expectation, 'status' | 'reason'> | { status: string; reason: string | null };
  injectedAt?: number;
  configMapAt?: number;
  watchAt?: number;
  sseAt?: number;
  /** Shown instead of the SSE time where the node's stream cannot see the fault. */
  sseNote?: string;
}

/** The report table: injection time after the start, the rest after the injection. */
export function reportTable(rows: readonly ReportRow[], start: number, paint: Paint): string {
  const after = (row: ReportRow, at: number | undefined): string =>
    row.injectedAt === undefined || at === undefined ? '—' : since(row.injectedAt, at);
  const head = `  ${'FAULT'.padEnd(44)} ${'EXPECTED'.padEnd(34)} ${'INJECTED'.padStart(9)} ${'CONFIGMAP'.padStart(10)} ${'API WATCH'.padStart(10)} ${'SSE'.padStart(8)}`;
  const lines = [paint('1', head)];
  for (const row of rows) {
    const expected = `${row.expectation.status}${row.expectation.reason ? ` (${row.expectation.reason})` : ''}`;
    const injected = row.injectedAt === undefined ? 'not run' : since(start, row.injectedAt);
    lines.push(
      `  ${row.text.padEnd(44)} ${expected.padEnd(34)} ${injected.padStart(9)} ${after(row, row.configMapAt).padStart(10)} ${after(row, row.watchAt).padStart(10)} ${(row.sseNote ?? after(row, row.sseAt)).padStart(8)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
