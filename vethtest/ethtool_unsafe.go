//go:build linux

package vethtest

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	ethtoolGTxCsum = 0x16 // ETHTOOL_GTXCSUM
	ethtoolSTxCsum = 0x17 // ETHTOOL_STXCSUM
	ethtoolGGRO    = 0x2b // ETHTOOL_GGRO
	ethtoolSGRO    = 0x2c // ETHTOOL_SGRO
)

type ethtoolValue struct {
	cmd  uint32
	data uint32
}

type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte // pad to sizeof(struct ifreq)
}

// setTxChecksum turns TX checksum offload of the named interface (in the
// calling thread's namespace) on or off, as `ethtool -K dev tx on|off`.
func setTxChecksum(dev string, on bool) error {
	v := ethtoolValue{cmd: ethtoolSTxCsum}
	if on {
		v.data = 1
	}
	return ethtool(dev, &v)
}

// txChecksum reports whether TX checksum offload is on for the named
// interface (in the calling thread's namespace).
func txChecksum(dev string) (bool, error) {
	v := ethtoolValue{cmd: ethtoolGTxCsum}
	err := ethtool(dev, &v)
	return v.data != 0, err
}

// setGRO turns generic receive offload of the named interface on or off,
// as `ethtool -K dev gro on|off`. On veth, on also gives the device a
// NAPI context, so what its peer sends is coalesced as a NIC's driver
// would (veth_set_features).
func setGRO(dev string, on bool) error {
	v := ethtoolValue{cmd: ethtoolSGRO}
	if on {
		v.data = 1
	}
	return ethtool(dev, &v)
}

// gro reports whether GRO is on for the named interface.
func gro(dev string) (bool, error) {
	v := ethtoolValue{cmd: ethtoolGGRO}
	err := ethtool(dev, &v)
	return v.data != 0, err
}

func ethtool(dev string, v *ethtoolValue) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], dev)
	ifr.data = unsafe.Pointer(v)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return fmt.Errorf("SIOCETHTOOL %s: %w", dev, errno)
	}
	return nil
}
