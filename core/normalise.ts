/**
 * Snapshot → DeviceObservation[] (CONTRACT §1, "Normalisation"): every device of every
 * family becomes one entry with a stable identity (`key`) and unified fields.
 *
 * This runs once per device per snapshot on the controller's hot path, so it builds one
 * plain object per device and reuses the snapshot's arrays (error codes, XID events) rather
 * than copying them. The result must be treated as read-only.
 *
 * GPUs have no link field: the link is `up` unless every metric is null (fell off the bus),
 * and unknown (null) for a GPU sent with `present: false`.
 *
 * A device sent with `readable: false` (the tool lists it but reads none of its metrics, as
 * nvidia-smi in some vGPU guests) is present with its own readings unknown: metrics null,
 * health `unknown`, link null (a 310P chip keeps its card's link and MCU power share, which
 * are the card's readings). So it raises no reason of its own (in particular not
 * `npu-offline`, which a GPU's inferred link `down` would) while its fault codes and XIDs,
 * which do not come from the metrics, still count.
 *
 * The payload's `canary` (the node's inference canary) is copied onto every device as
 * `inference_canary_failures`: the canary says serving on the node is broken, not which chip.
 *
 * Keys are unique within one snapshot: should two devices share a key (two chips behind one
 * bus id), the later ones get `#<id>` appended, so they can never share state.
 */
import type {
  Card310,
  Chip310,
  Gpu,
  Npu910,
  Payload,
  Snapshot,
  DeviceObservation,
} from '../contracts/index.js';

const NO_CODES: readonly string[] = Object.freeze([]);
const NO_XIDS: readonly DeviceObservation['xids'][number][] = Object.freeze([]);

/** Normalises every device of one validated snapshot. */
export function normalise(snapshot: Snapshot): DeviceObservation[] {
  const payload = snapshot.payload;
  const out: DeviceObservation[] = [];
  if (payload.family === '910B') {
    for (const npu of payload.npus) out.push(fromNpu910(npu));
  } else if (payload.family === '310P') {
    for (const card of payload.cards) {
      for (const chip of card.chips) out.push(fromChip310(card, chip));
    }
  } else {
    for (const gpu of payload.gpus) out.push(fromGpu(gpu));
  }
  if (payload.canary !== undefined) {
    const failures = payload.canary.consecutive_failures;
    for (const device of out) device.inference_canary_failures = failures;
  }
  return uniqueKeys(out);
}

/**
 * How many devices (chips) a payload lists: what `normalise` would return, counted without
 * building them. A 310P card counts its chips. The limit `max_devices_per_node` reads this.
 */
export function devicesIn(payload: Payload): number {
  if (payload.family === '910B') return payload.npus.length;
  if (payload.family === 'nvidia') return payload.gpus.length;
  let chips = 0;
  for (const card of payload.cards) chips += card.chips.length;
  return chips;
}

/** Lower-cases a health word, without allocating for the common spellings. */
export function lowerHealth(health: string): string {
  switch (health) {
    case 'OK':
      return 'ok';
    case 'Warning':
      return 'warning';
    case 'Alarm':
      return 'alarm';
    case 'Critical':
      return 'critical';
    case 'UNKNOWN':
      return 'unknown';
    default:
      return health.toLowerCase();
  }
}

/** The total of two counters; unknown when either part is (a null read as 0 would fake a reset or an increase). */
function sum(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : a + b;
}

/** Reads every metric, the health word and the link of an unreadable device as unknown. */
function unreadable(device: DeviceObservation): DeviceObservation {
  device.health = 'unknown';
  device.temperature_c = null;
  device.power_w = null;
  device.ecc_errors = null;
  device.ecc_uncorrectable = null;
  device.pcie_link_status = null;
  return device;
}

function fromNpu910(npu: Npu910): DeviceObservation {
  const device = fromReadableNpu910(npu);
  return npu.readable === false ? unreadable(device) : device;
}

function fromReadableNpu910(npu: Npu910): DeviceObservation {
  const id = npu.chip > 0 ? `npu${npu.npu}-${npu.chip}` : `npu${npu.npu}`;
  const ecc = npu.hbm.ecc;
  return {
    id,
    // A chip beyond the first (A3) carries its chip number, as a 310P chip does, so that two
    // chips behind one PCIe function can never swap identities by the order of their rows.
    key: npu.pcie.bus_id === null ? id : npu.chip > 0 ? `${npu.pcie.bus_id}/${npu.chip}` : npu.pcie.bus_id,
    resource_id: `Ascend910-${npu.phy_id ?? npu.npu}`,
    kind: 'npu',
    model: npu.name,
    health: lowerHealth(npu.health),
    temperature_c: npu.temp_c,
    power_w: npu.power_w,
    ecc_errors: sum(ecc.single_bit, ecc.double_bit),
    ecc_uncorrectable: ecc.double_bit,
    pcie_link_status: npu.pcie.link,
    error_codes: npu.error_codes,
    xids: NO_XIDS as DeviceObservation['xids'],
    present: npu.present,
  };
}

function fromChip310(card: Card310, chip: Chip310): DeviceObservation {
  const device = fromReadableChip310(card, chip);
  if (chip.readable !== false) return device;
  // The link and the MCU power are the card's readings, not the chip's: they stand.
  const { pcie_link_status: link } = device;
  unreadable(device);
  device.pcie_link_status = link;
  device.power_w = cardPowerShare(card);
  return device;
}

/** The card's MCU power divided among its chips; null when unknown. */
function cardPowerShare(card: Card310): number | null {
  return card.mcu_power_w === null || card.chips.length === 0 ? null : card.mcu_power_w / card.chips.length;
}

function fromReadableChip310(card: Card310, chip: Chip310): DeviceObservation {
  const id = `npu${chip.device_id}`;
  const cardPower = cardPowerShare(card);
  return {
    id,
    key: card.bus_id === null ? id : `${card.bus_id}/${chip.chip}`,
    resource_id: `Ascend310P-${chip.device_id}`,
    kind: 'npu',
    model: card.name,
    health: lowerHealth(chip.health),
    temperature_c: chip.temperature,
    power_w: chip.power_w ?? cardPower,
    ecc_errors: sum(chip.ddr.ecc_sbe, chip.ddr.ecc_dbe),
    ecc_uncorrectable: chip.ddr.ecc_dbe,
    pcie_link_status: card.pcie_link === null ? null : card.pcie_link === 1 ? 'up' : 'down',
    error_codes: chip.error_codes,
    xids: NO_XIDS as DeviceObservation['xids'],
    present: chip.present,
  };
}

function fromGpu(gpu: Gpu): DeviceObservation {
  const device = fromReadableGpu(gpu);
  return gpu.readable === false ? unreadable(device) : device;
}

function fromReadableGpu(gpu: Gpu): DeviceObservation {
  const id = `gpu${gpu.index}`;
  const allNull =
    gpu.temperature_gpu === null &&
    gpu.power_draw_w === null &&
    gpu.ecc_corrected_volatile === null &&
    gpu.ecc_uncorrected_volatile === null &&
    gpu.pcie_link_gen === null &&
    gpu.pcie_link_width === null;
  return {
    id,
    key: gpu.uuid ?? gpu.bus_id ?? id,
    resource_id: gpu.uuid ?? gpu.bus_id ?? id,
    kind: 'gpu',
    model: gpu.name,
    health: 'unknown',
    temperature_c: gpu.temperature_gpu,
    power_w: gpu.power_draw_w,
    ecc_errors: sum(gpu.ecc_corrected_volatile, gpu.ecc_uncorrected_volatile),
    ecc_uncorrectable: gpu.ecc_uncorrected_volatile,
    // A GPU the agent lists as absent has no link to speak of: device-missing, not npu-offline.
    pcie_link_status: !gpu.present ? null : allNull ? 'down' : 'up',
    error_codes: NO_CODES as string[],
    xids: gpu.xid_events,
    present: gpu.present,
  };
}

function uniqueKeys(devices: DeviceObservation[]): DeviceObservation[] {
  if (devices.length < 2) return devices;
  const seen = new Set<string>();
  for (const device of devices) {
    if (seen.has(device.key)) {
      // The suffixed key may be taken too (a dishonest agent can list `A#gpu1` itself).
      let key = `${device.key}#${device.id}`;
      for (let n = 2; seen.has(key); n++) key = `${device.key}#${device.id}#${n}`;
      device.key = key;
    }
    seen.add(device.key);
  }
  return devices;
}
