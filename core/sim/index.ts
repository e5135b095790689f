/**
 * The fleet simulator's public door: deterministic `hdc.health/v1` traces for a fleet of
 * 910B, A3, 310P and NVIDIA nodes, faults on a timeline, the demo's scripted scenario with
 * its expected labels, a runner that plays a scenario through a detection engine, and one
 * node read live second by second (`createLiveNode`, with `buildNode` to make the node).
 */
export { createRng, hashSeed, type Rng } from './prng.js';
export {
  buildFleet,
  buildNode,
  deviceTotal,
  findDevice,
  mixedFleet,
  roundRobinFleet,
  type DeviceProfile,
  type FleetGroup,
  type SimDevice,
  type SimKind,
  type SimNode,
} from './fleet.js';
export { simFaultSupport, type DeviceFaultKind, type Fault } from './faults.js';
export {
  DEFAULT_START,
  deliver,
  generateTrace,
  toEpoch,
  type Delivery,
  type Trace,
  type TraceOptions,
} from './generate.js';
export { createLiveNode, type LiveNode, type LiveNodeOptions } from './live.js';
export {
  demoScenario,
  scenarioTrace,
  SCENARIO,
  type ExpectedLabel,
  type ExpectedStep,
  type Scenario,
  type ScenarioEvent,
} from './scenario.js';
export {
  checkLabels,
  playScenario,
  publishedDevices,
  type PublishedDevice,
  type ScenarioStep,
} from './run.js';
