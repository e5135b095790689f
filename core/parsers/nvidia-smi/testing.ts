/**
 * `nvidia-smi nvlink --status` outputs for the tests, each with where it comes from: verbatim
 * from the thread named where one printed the whole output, else assembled in the same layout
 * (said so), with the per-link figure each NVLink generation shows.
 */

/** `n` links, each `value`, indented as nvidia-smi does (a tab, a blank). */
function links(n: number, value: (link: number) => string, indent = '\t '): string[] {
  return Array.from({ length: n }, (_, link) => `${indent}Link ${link}: ${value(link)}`);
}

/** GPUs 0 and 1 of an 8×A100 SXM4 node, 12 links at 25 GB/s each (NVIDIA/nccl-tests#228, verbatim). */
export const NVLINK_A100 = [
  'GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05)',
  ...links(12, () => '25 GB/s'),
  'GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-0c512562-871f-8257-6187-b5ae1b986d5e)',
  ...links(12, () => '25 GB/s'),
  '',
].join('\n');

/**
 * GPU 3 of a V100 node with links 3 and 5 down, the UUID elided by the reporter
 * (Azure/azhpc-diagnostics#73, verbatim, nine blanks of indent as pasted).
 */
export const NVLINK_V100_TWO_DOWN = [
  'GPU 3: Tesla V100-SXM2-32GB (UUID: ...)',
  ...links(6, (link) => (link === 3 || link === 5 ? '<inactive>' : '25.781 GB/s'), '         '),
  '',
].join('\n');

/** GPUs 0 and 1 of a GB200 tray, 18 links at 53.125 GB/s (NVIDIA/k8s-test-infra#371, GPU 1's links completed). */
export const NVLINK_GB200 = [
  'GPU 0: NVIDIA GB200 (UUID: GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde)',
  ...links(18, () => '53.125 GB/s', '         '),
  'GPU 1: NVIDIA GB200 (UUID: GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5)',
  ...links(18, () => '53.125 GB/s', '         '),
  '',
].join('\n');

/** The UUID of GPU `index` in the assembled outputs. */
export function nvlinkUuid(index: number): string {
  return `GPU-5e0c2a4${index}-91d3-4c1e-8f7a-0b2d6c9e3f1${index}`;
}

/**
 * An 8×H200 HGX node (NVLink 4 through NVSwitch: 18 links each at 26.562 GB/s, the figure
 * nvidia-smi prints for H100 and H200). Assembled in the layout above; `inactive(gpu, link)`
 * marks links down.
 */
export function nvlinkH200(inactive: (gpu: number, link: number) => boolean = () => false): string {
  const gpus = Array.from({ length: 8 }, (_, gpu) => [
    `GPU ${gpu}: NVIDIA H200 (UUID: ${nvlinkUuid(gpu)})`,
    ...links(18, (link) => (inactive(gpu, link) ? '<inactive>' : '26.562 GB/s')),
  ]);
  return `${gpus.flat().join('\n')}\n`;
}

/**
 * Two H100 PCIe cards bridged with 12 of their 18 links: links 4, 5, 10, 11, 16 and 17 are
 * inactive by design (Azure/azurehpc-health-checks#162 lists them). Assembled.
 */
export const NVLINK_H100_PCIE_BRIDGED = [0, 1]
  .flatMap((gpu) => [
    `GPU ${gpu}: NVIDIA H100 PCIe (UUID: ${nvlinkUuid(gpu)})`,
    ...links(18, (link) => ([4, 5, 10, 11, 16, 17].includes(link) ? '<inactive>' : '26.562 GB/s')),
  ])
  .concat('')
  .join('\n');

/** A B200 whose links are all down, said by NVML in place of the links (leptonai/gpud#1085, verbatim). */
export const NVLINK_B200_ALL_INACTIVE = [
  'GPU 2: NVIDIA B200 (UUID: GPU-xxx)',
  'NVML: Unable to retrieve NVLink information as all links are inActive',
  '',
].join('\n');

/** GPUs without NVLink: the verdict after the UUID, or nothing listed. Assembled. */
export const NVLINK_NONE = [
  'GPU 0: NVIDIA RTX A4000 (UUID: GPU-aaaa) Device does not have or support Nvlink',
  'GPU 1: NVIDIA L4 (UUID: GPU-bbbb)',
  '',
].join('\n');
