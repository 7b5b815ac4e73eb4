//go:build tools

// Package tools names the container runtime okt builds for a node of a release from 1.36 on (whose
// kubelet needs containerd 2): the daemon, its runc shim and its client, so that `go mod tidy` keeps
// them and their checksums in go.mod and go.sum (src/cluster/kubernetes-modules.ts builds them).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
