// `okt/sidecar-client`: the sidecar's typed client and protocol (src/sidecar-client).
import './node-check.ts';
export * from '../sidecar-client/index.ts';
