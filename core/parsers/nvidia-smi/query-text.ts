/** `nvidia-smi -q` text: read into a tree by indentation, then one GPU per `GPU <bus id>` block. */
import { ParseError, excerpt } from '../../errors.js';
import { isBlank, splitLines } from '../common.js';
import type { NvidiaParseOptions, NvidiaParsed } from './parsed.js';
import { checkAttachedGpus, gpuFromTree, withDriver } from './query-gpu.js';
import { at, child, keyOf, type QNode } from './query-tree.js';
import { checkNvidiaSmiToolError } from './tool-error.js';

/**
 * `key : value` of one `-q` line (already trimmed): the key ends at the first colon that has a
 * blank before it and a blank or the end after it (`Bus Id : 00000000:19:00.0`); null when
 * there is none (a section title such as `PCI`). Found by scanning the colons, never by a
 * `^(.+?)\s+:` pattern, which backtracks quadratically on a long line of blanks.
 */
function qKeyValue(text: string): { key: string; value: string } | null {
  for (let colon = text.indexOf(':'); colon >= 0; colon = text.indexOf(':', colon + 1)) {
    if (colon < 2 || !isBlank(text[colon - 1] ?? '')) continue;
    const after = text[colon + 1];
    if (after !== undefined && !isBlank(after)) continue;
    const key = text.slice(0, colon).trimEnd();
    if (key !== '') return { key, value: text.slice(colon + 1).trim() };
  }
  return null;
}

/** Reads `nvidia-smi -q` text into a tree by indentation. */
function readQTree(lines: readonly string[]): QNode {
  const root: QNode = { key: '', id: '', value: null, attrs: {}, line: 0, children: [] };
  const stack: Array<{ indent: number; node: QNode }> = [{ indent: -1, node: root }];
  for (const [index, raw] of lines.entries()) {
    const line = raw.replace(/\t/g, '    ');
    if (line.trim() === '' || /^=+NVSMI LOG=+$/.test(line.trim())) continue;
    const indent = line.length - line.trimStart().length;
    const pair = qKeyValue(line.trim());
    const key = pair ? pair.key : line.trim();
    const node: QNode = {
      key,
      id: keyOf(key),
      value: pair ? pair.value : null,
      attrs: {},
      line: index + 1,
      children: [],
    };
    while ((stack[stack.length - 1]?.indent ?? -1) >= indent) stack.pop();
    stack[stack.length - 1]?.node.children.push(node);
    stack.push({ indent, node });
  }
  return root;
}

/**
 * Parses `nvidia-smi -q` text. GPUs are indexed in the order printed. The last GPU block must
 * reach its `Processes` entry, which every complete output prints: an output cut short is a
 * ParseError naming the last line, not a GPU with silently missing fields. An output cut
 * between two GPU blocks is caught by the header's `Attached GPUs` count (checkAttachedGpus).
 */
export function parseNvidiaQuery(text: string, options: NvidiaParseOptions = {}): NvidiaParsed {
  const lines = splitLines(text);
  checkNvidiaSmiToolError(lines);
  const root = readQTree(lines);
  const blocks = root.children.filter((node) =>
    /^GPU [0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/.test(node.key),
  );
  if (blocks.length === 0)
    throw new ParseError("no 'GPU <bus id>' block in the nvidia-smi -q output", root.children[0]?.line ?? 1);
  const last = blocks[blocks.length - 1] as QNode;
  if (!child(last, 'processes')) {
    const lastLine = lines.length - [...lines].reverse().findIndex((l) => l.trim() !== '');
    throw new ParseError(
      `the output ends inside the block of GPU ${excerpt(last.key.slice(4), 20)} (line ${last.line}) before its 'Processes' entry: it is truncated`,
      lastLine,
    );
  }
  const driverCount = checkAttachedGpus(
    child(root, 'attached gpus'),
    { blocks: blocks.length, what: 'block', fallbackLine: blocks[0]?.line ?? 1 },
    options.allowMissingGpus === true,
  );
  const gpus = blocks.map((block, i) => gpuFromTree(block, i, block.key.slice(4), options.onOutOfRange));
  return withDriver(gpus, at(root, ['driver version']), at(root, ['timestamp']), driverCount);
}
