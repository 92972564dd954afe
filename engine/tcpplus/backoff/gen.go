package backoff

// The BPF object is generated and committed; `make bpf` at the repository root regenerates it
// (needs clang and libbpf-dev). -mcpu=v3 for the atomic compare-and-swap.
//go:generate go tool bpf2go -target bpfel -no-global-types -go-package backoff dropOnce bpf/drop_once.c -- -O2 -g -Wall -Werror -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu
//go:generate go tool bpf2go -target bpfel -no-global-types -go-package backoff caState bpf/ca_state.c -- -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu
