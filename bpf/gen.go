package bpf

// Regenerate the committed ustack_bpf*.go and .o files from xdp.c. Needs
// clang and Debian's libbpf-dev (bpf/bpf_helpers.h); the include path for
// asm/types.h is the multiarch one of amd64 Debian. clang-version.txt names
// the clang that built the committed object (CI compares byte for byte
// only with that one).
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -idirafter /usr/include/x86_64-linux-gnu" -target bpfel,bpfeb ustack xdp.c
