/** Test helpers for other folders' tests (the door lets a test import a folder's testing.ts). */
export { FakeLeaseClient, type LeaseCall, type LeaseOperation } from './fake-lease-client.js';
