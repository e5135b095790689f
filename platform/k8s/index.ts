/** The Kubernetes helpers of platform/: the one door other folders import them through. */
export { MicroTime, microTime } from './micro-time.js';
