/**
 * nvidia-smi's own failure messages (NVML not loaded, a GPU lost), told apart from data before
 * any layout is read.
 */
import { excerpt } from '../../errors.js';
import { ToolError, normaliseBusId, words } from '../common.js';

/**
 * Throws a ToolError when the output is nvidia-smi's failure message rather than data. Lost
 * GPUs (`Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost`) are all
 * collected so the agent can mark each of them off the bus.
 */
export function checkNvidiaSmiToolError(lines: readonly string[]): void {
  const lost: string[] = [];
  let first: { line: number; text: string } | undefined;
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    const handle = lostHandleBusId(line);
    const fatal =
      handle !== null ||
      /GPU is lost/i.test(line) ||
      /^NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/.test(line) ||
      /^Failed to initialize NVML/.test(line) ||
      /^Unknown Error$/.test(line) ||
      /^No devices were found$/.test(line);
    if (!fatal) continue;
    first ??= { line: index + 1, text: line };
    const bus = handle ? normaliseBusId(handle) : null;
    if (bus !== null) lost.push(bus);
  }
  if (first)
    throw new ToolError(`nvidia-smi failed: ${excerpt(words(first.text).join(' '))}`, first.line, lost);
}

const LOST_HANDLE = 'Unable to determine the device handle for GPU';

/**
 * The bus id of `Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost`
 * (with or without the blank after `GPU`), or null when the line is not that message. Read by
 * scanning: the id is the run of hex digits, colons and dots, up to its last colon.
 */
function lostHandleBusId(line: string): string | null {
  if (!line.startsWith(LOST_HANDLE)) return null;
  const rest = line.slice(LOST_HANDLE.length).trimStart();
  let end = 0;
  while (end < rest.length && /[0-9A-Fa-f:.]/.test(rest[end] ?? '')) end++;
  const colon = rest.lastIndexOf(':', end - 1);
  return colon > 0 ? rest.slice(0, colon) : null;
}
