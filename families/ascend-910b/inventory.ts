/**
 * Completes a 910B payload with the installed chips the tool did not report, as `present:
 * false` (agent/inventory). By bus id when the payload carries bus ids (npu-smi's table does).
 * When it carries none (an `hdc` build that prints no PCIe field), by `/dev/davinci<N>` with N
 * taken as the NPU id: the driver numbers its device nodes by logical device id, which equals
 * npu-smi's NPU id on single-chip-per-NPU nodes (910B, 910). On A3 nodes (two chips per NPU,
 * davinci numbering per chip) that no longer holds, so the fallback is not used when the
 * payload has a chip beyond 0.
 */
import { ASCEND_DEVICE_NODE } from '../ascend/index.js';
import type { BusKey, InstalledDevices } from '../family.js';
import { freeNumber } from '../inventory.js';
import type { Npu910, Payload910 } from './schema.js';

function offlineNpu(npu: number, chip: number, bus: string | null, old: Npu910 | undefined): Npu910 {
  return {
    npu,
    chip,
    ...(old?.phy_id === undefined ? {} : { phy_id: old.phy_id }),
    name: old?.name ?? '',
    health: 'UNKNOWN',
    temp_c: null,
    power_w: null,
    aicore_pct: null,
    hbm: { used_mb: null, total_mb: null, temp_c: null, ecc: { single_bit: null, double_bit: null } },
    pcie: { bus_id: bus, link: null },
    error_codes: [],
    present: false,
  };
}

export function completeNpus(
  payload: Payload910,
  installed: InstalledDevices,
  previous: Payload910 | null,
  busKey: BusKey,
): Payload910 {
  const hasBusIds = (npus: readonly Npu910[]): boolean => npus.some((npu) => npu.pcie.bus_id !== null);
  const byBus = hasBusIds(payload.npus) || (payload.npus.length === 0 && hasBusIds(previous?.npus ?? []));
  const added = byBus
    ? missingByBus(payload, installed.busIds, previous, busKey)
    : missingByNode(payload, installed.deviceNodes);
  if (added.length === 0) return payload;
  const npus = [...payload.npus, ...added].sort((a, b) => a.npu - b.npu || a.chip - b.chip);
  return { ...payload, npus };
}

function missingByBus(
  payload: Payload910,
  installed: readonly string[],
  previous: Payload910 | null,
  busKey: BusKey,
): Npu910[] {
  const reported = new Set(payload.npus.map((npu) => busKey(npu.pcie.bus_id)));
  const known = new Map(previous?.npus.map((npu) => [busKey(npu.pcie.bus_id), npu]) ?? []);
  const taken = new Set(payload.npus.map((npu) => npu.npu));
  const pairs = new Set(payload.npus.map((npu) => `${npu.npu}/${npu.chip}`));
  return installed
    .filter((bus) => !reported.has(bus))
    .map((bus) => {
      const old = known.get(bus);
      if (old && !pairs.has(`${old.npu}/${old.chip}`)) {
        pairs.add(`${old.npu}/${old.chip}`);
        return offlineNpu(old.npu, old.chip, bus, old);
      }
      // The NPU ids follow PCI order on the nodes seen: the installed list's order is the guess.
      return offlineNpu(freeNumber(taken, installed.indexOf(bus)), 0, bus, undefined);
    });
}

function missingByNode(payload: Payload910, deviceNodes: readonly string[]): Npu910[] {
  if (payload.npus.some((npu) => npu.chip > 0)) return [];
  const reported = new Set(payload.npus.map((npu) => npu.npu));
  return deviceNodes
    .filter((node) => node.startsWith(ASCEND_DEVICE_NODE))
    .map((node) => Number(node.slice(ASCEND_DEVICE_NODE.length)))
    .filter((id) => !reported.has(id))
    .map((id) => offlineNpu(id, 0, null, undefined));
}
