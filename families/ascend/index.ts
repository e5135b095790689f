/**
 * What the Ascend families (910B, 310P) share: Huawei's PCI functions, the `davinci` device
 * nodes, and the tools that read them (hdc where installed, else npu-smi).
 */
const HUAWEI_VENDOR = 0x19e5;
const HUAWEI_ACCELERATOR_CLASS = 0x1200;

/** The vendor Ascend devices are listed under in an inventory. */
export const ASCEND_VENDOR = 'huawei';

/** The Ascend device nodes' prefix: `/dev/davinci<N>`. */
export const ASCEND_DEVICE_NODE = 'davinci';

/** `--collector auto` on an Ascend node: hdc where it is installed, else npu-smi. */
export const ASCEND_COLLECTORS = ['hdc', 'npu-smi'] as const;

/**
 * Huawei (vendor 0x19e5) with class 0x1200xx (processing accelerator) and a device id in
 * 0xd000-0xdfff, the Ascend range (e.g. 0xd100 310, 0xd500 310P, 0xd801 910, 0xd802 910B).
 * Huawei also makes the Kunpeng host's own functions (NICs, SAS, and the HiSilicon ZIP engine
 * 0xa250, itself a processing accelerator): the device range keeps them out.
 */
export function isAscendAccelerator(vendor: number, device: number, pciClass: number): boolean {
  return (
    vendor === HUAWEI_VENDOR && pciClass >> 8 === HUAWEI_ACCELERATOR_CLASS && (device & 0xf000) === 0xd000
  );
}
