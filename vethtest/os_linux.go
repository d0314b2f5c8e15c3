package vethtest

import "golang.org/x/sys/unix"

const ifaFlagNoDAD = unix.IFA_F_NODAD
