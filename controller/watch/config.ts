/**
 * The node watch's settings, as a zod schema the controller's config nests under `nodes`, so
 * they arrive as `--nodes-resource-names`, `NPU_FAULT_NODES_LABEL_SELECTOR`, … like every
 * setting.
 */
import { z } from 'zod';
import { FAMILIES } from '../../families/index.js';
import { parseConfigSection } from '../../platform/index.js';
import { LabelSelectorError, parseLabelSelector } from './label-selector.js';

/**
 * The extended resources that make a node an accelerator node, unless configured otherwise:
 * every family's device plugin resources (`huawei.com/Ascend910`, `huawei.com/Ascend310P`,
 * `huawei.com/Ascend310`, `nvidia.com/gpu`).
 */
export const DEFAULT_ACCELERATOR_RESOURCES = FAMILIES.resourceNames;

/** An extended resource name: `<DNS subdomain>/<name>` (the API's rule for them). */
const RESOURCE_NAME =
  /^(?=[^/]{1,253}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** The node watch's settings; every field has a default. */
export const nodeWatchConfigSchema = z.strictObject({
  resourceNames: z
    .array(z.string().regex(RESOURCE_NAME, 'must be an extended resource name such as vendor.com/device'))
    .default([...DEFAULT_ACCELERATOR_RESOURCES])
    .describe('a node whose capacity has a non-zero quantity of one of these is an accelerator node'),
  labelSelector: z
    .string()
    .default('')
    .superRefine((text, context) => {
      try {
        parseLabelSelector(text);
      } catch (error) {
        if (!(error instanceof LabelSelectorError)) throw error;
        context.addIssue({ code: 'custom', message: error.message });
      }
    })
    .describe(
      'a node matching this label selector is an accelerator node too (k=v, k!=v, k, !k, k in (a,b), k notin (a,b); empty: none)',
    ),
  watchdogSeconds: z
    .number()
    .positive()
    .default(90)
    .describe(
      'restart a watch that brought no event or bookmark for this long (the apiserver bookmarks about every minute)',
    ),
});

/** Node watch settings as given (every field optional). */
export type NodeWatchConfigInput = z.input<typeof nodeWatchConfigSchema>;
/** Node watch settings with defaults filled in and checked. */
export type NodeWatchConfig = z.output<typeof nodeWatchConfigSchema>;

/** Fills defaults and checks; throws ConfigError with one `nodes.<field>: message` line per problem. */
export function parseNodeWatchConfig(input: NodeWatchConfigInput = {}): NodeWatchConfig {
  return parseConfigSection(nodeWatchConfigSchema, input, 'nodes');
}
