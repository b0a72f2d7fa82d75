// The entry of issuer-http-worker.ts's thread: a worker thread does not inherit the loader that
// `gatehouse` (bin.mjs) registers on the main thread, so it registers tsx's own first.
import { register } from 'tsx/esm/api';

register();
await import('./issuer-http-worker.ts');
