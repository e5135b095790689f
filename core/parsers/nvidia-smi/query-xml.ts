/** `nvidia-smi -q -x` XML: read into the `-q` tree, then one GPU per `<gpu>` element. */
import { ParseError } from '../../errors.js';
import { splitLines } from '../common.js';
import type { NvidiaParseOptions, NvidiaParsed } from './parsed.js';
import { checkAttachedGpus, gpuFromTree, withDriver } from './query-gpu.js';
import { at, child } from './query-tree.js';
import { checkNvidiaSmiToolError } from './tool-error.js';
import { readXmlTree } from './xml-reader.js';

/**
 * Parses `nvidia-smi -q -x` XML (any nvsmi_device DTD version). A document cut short fails on
 * its unclosed elements; a complete one must hold as many `<gpu>` as `<attached_gpus>` says.
 */
export function parseNvidiaXml(text: string, options: NvidiaParseOptions = {}): NvidiaParsed {
  checkNvidiaSmiToolError(splitLines(text));
  const log = child(readXmlTree(text), 'nvidia smi log');
  if (!log) throw new ParseError('XML without an <nvidia_smi_log> element', 1);
  const blocks = log.children.filter((node) => node.key === 'gpu');
  if (blocks.length === 0) throw new ParseError('no <gpu> element in the nvidia-smi XML', log.line);
  const driverCount = checkAttachedGpus(
    child(log, 'attached gpus'),
    { blocks: blocks.length, what: 'element', fallbackLine: log.line },
    options.allowMissingGpus === true,
  );
  const gpus = blocks.map((block, i) =>
    gpuFromTree(
      block,
      i,
      block.attrs['id'] ?? at(block, ['pci'], ['pci bus id']) ?? '',
      options.onOutOfRange,
    ),
  );
  return withDriver(gpus, at(log, ['driver version']), at(log, ['timestamp']), driverCount);
}
