module github.com/ustack-dev/ustack

go 1.26.3

require (
	github.com/cilium/ebpf v0.22.0
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/net v0.52.0 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
