// `okt`: the lifecycle graph, the operator, the CloudEvents, the sidecar's client (src/index.ts).
import './node-check.ts';
export * from '../index.ts';
