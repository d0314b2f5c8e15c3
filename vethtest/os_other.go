//go:build !linux

package vethtest

import "errors"

const ifaFlagNoDAD = 0x02 // IFA_F_NODAD; unused: New fails earlier

func setTxChecksum(string, bool) error {
	return errors.New("vethtest: network namespaces need Linux")
}
