/**
 * Text tables for a terminal: cells padded to their columns, colour applied after padding
 * (escapes have no width, so coloured columns still line up).
 */
import type { DeviceStatus } from '../../contracts/index.js';

/** The colours, by status and for dim text and warnings. */
const COLORS: Readonly<Record<DeviceStatus | 'dim' | 'warn', string>> = {
  failed: '\x1b[31;1m',
  unknown: '\x1b[35m',
  degraded: '\x1b[33m',
  healthy: '\x1b[32m',
  dim: '\x1b[2m',
  warn: '\x1b[33;1m',
};
const RESET = '\x1b[0m';

/** A colour's name. */
export type Color = keyof typeof COLORS;

/** One cell: its text, and its colour when colour is on. */
export interface Cell {
  text: string;
  color?: Color;
}

export const cell = (text: string, color?: Color): Cell => (color ? { text, color } : { text });

/** `text` in `color` when `enabled`. */
export function paint(text: string, color: Color, enabled: boolean): string {
  return enabled ? `${COLORS[color]}${text}${RESET}` : text;
}

/** Rows of cells, each line ending in a newline; the last column is not padded. */
export function table(rows: readonly (readonly Cell[])[], color: boolean): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.text.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => {
          const padded = i === row.length - 1 ? cell.text : cell.text.padEnd(widths[i] ?? 0);
          return color && cell.color ? paint(padded, cell.color, true) : padded;
        })
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}
