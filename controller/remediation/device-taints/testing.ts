/**
 * Test helpers for other folders' tests (the door lets a test import a folder's testing.ts):
 * the in-memory DeviceTaintClient.
 */
export { FakeDeviceTaintClient } from './fake-client.js';
