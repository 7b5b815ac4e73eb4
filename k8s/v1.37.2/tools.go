//go:build tools

// Package tools names the commands okt builds from this release's modules, so that `go mod tidy`
// keeps them and their checksums in go.mod and go.sum. okt builds each with
// `go build -mod=readonly <package>` (src/cluster/kubernetes-modules.ts).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
