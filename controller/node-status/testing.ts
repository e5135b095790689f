/** Test doubles of controller/node-status (for tests of other folders). */
export { FakeEventClient, FakeNodeClient } from './fake-clients.js';
