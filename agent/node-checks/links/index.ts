/**
 * The links check (the one door to agent/node-checks/links/): NIC and RDMA link state from
 * sysfs and Ascend RoCE ports through hccn_tool, with flap counting; raises `nic-link-down`
 * and `rdma-port-down`. Fakes for tests are in testing.ts.
 */
export { createLinksCheck, type LinksCheckDeps } from './check.js';
export { linksCheckConfigSchema, type LinksCheckConfig } from './config.js';
