//go:build tools

// Package tools names the commands okt builds from this release's modules, so that `go mod tidy`
// keeps them and their checksums in go.mod and go.sum. okt builds each with
// `go build -mod=readonly <package>` (src/cluster/kubernetes-modules.ts). Only a control plane:
// 1.35 is the oldest release okt supports, and a node runs on the default release.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
