// `okt/events`: the lifecycle CloudEvents: types, the consumer helper and receiver, the emitter (src/events).
import './node-check.ts';
export * from '../events/index.ts';
