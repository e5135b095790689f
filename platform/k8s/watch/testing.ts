/** Test helpers for other folders' tests (the door lets a test import a folder's testing.ts). */
export { FakeListWatchClient } from './fake-list-watch-client.js';
