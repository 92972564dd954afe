package tcpplus

// The BPF object is generated and committed (bpf2go's intended workflow), so building the engine
// needs no clang. `make bpf` at the repository root regenerates it; it needs clang and
// libbpf-dev (for <bpf/bpf_helpers.h>). The -I paths find <asm/types.h> on Debian hosts of
// either architecture; a path that does not exist is ignored by clang.
//go:generate go tool bpf2go -target bpfel -no-global-types -go-package tcpplus cubicplus bpf/cubicplus.c -- -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu
