// `okt/cluster`: a local control plane (etcd + kube-apiserver) for tests and local runs (src/cluster).
import './node-check.ts';
export * from '../cluster/index.ts';
