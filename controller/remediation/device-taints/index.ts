/**
 * Kubernetes device taints (DRA), the one door into device-taints/: which DeviceTaintRules
 * should exist (desired.ts, pure, from the published entries and the nodes' ResourceSlices),
 * and the reconciler that makes it so every remediation pass (reconcile.ts) through the API
 * client (client.ts; fake-client.ts beside it).
 */
export {
  DEVICE_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NODE_ANNOTATION,
  OWNER_LABEL,
  PCI_BUS_ID_ATTRIBUTE,
  desiredDeviceTaints,
  identifiersOf,
  nodesToTaint,
  normalisePciAddress,
  ruleName,
  type DesiredDeviceTaints,
  type DesiredRule,
  type DeviceTaintNode,
  type UnmatchedDevice,
  type UnmatchedWhy,
} from './desired.js';
export {
  parseResourceSlice,
  type ParsedSlice,
  type ResourceSliceView,
  type SliceDevice,
} from './resource-slices.js';
export {
  DEVICE_TAINT_RULE_VERSIONS,
  createKubeDeviceTaintClient,
  ruleObject,
  type DeviceTaintClient,
  type RuleOwner,
  type StoredRule,
} from './client.js';
export {
  createDeviceTaintReconciler,
  type DeviceTaintDeps,
  type DeviceTaintInput,
  type DeviceTaintReconciler,
} from './reconcile.js';
