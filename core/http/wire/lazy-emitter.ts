/**
 * The base class of the own server's request and response: node's EventEmitter, whose fields are
 * made when the first listener is added rather than by its constructor.
 *
 * Why: EventEmitter's constructor stores `_events` (a fresh object), `_eventsCount`,
 * `_maxListeners` and two symbol-keyed flags on every instance, through stores that see every
 * emitter class of the process, so they are megamorphic: ~1,200 instructions for each of the two
 * objects a request makes (callgrind, the load rows), while the request mostly gets no listener
 * and the response one. EventEmitter's methods do without them (node:events): `on` makes
 * `_events` when it is missing, `emit`, `listenerCount` and `removeListener` take a missing one
 * for no listeners, and the flags and `_maxListeners` are read from EventEmitter.prototype.
 */
import { EventEmitter } from 'node:events';

/** A constructor that makes nothing: the instance inherits EventEmitter's methods and defaults. */
function LazyEmitter(): void {}
Object.setPrototypeOf(LazyEmitter.prototype, EventEmitter.prototype);

/** Extended as EventEmitter is (`class X extends LazyEventEmitter`), its constructor skipped. */
export const LazyEventEmitter = LazyEmitter as unknown as new () => EventEmitter;
