/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel-internal types wl_cubicp needs, declared locally instead of a generated
 * vmlinux.h. Every struct is marked preserve_access_index, so each field access is a CO-RE
 * relocation that libbpf-compatible loaders (cilium/ebpf) resolve against the running kernel's
 * BTF by type and field name: the offsets below need not match the kernel's, only the names.
 * struct tcp_congestion_ops is the exception: it is the struct_ops value, copied member by
 * member (by name) into the kernel's bpf_struct_ops_tcp_congestion_ops by the loader.
 */
#ifndef WIRELAB_KERNEL_TYPES_H
#define WIRELAB_KERNEL_TYPES_H

#include <linux/types.h>

typedef __u8 u8;
typedef __u32 u32;
typedef __u64 u64;

/*
 * Opaque here, but declared as (empty) structs rather than forward declarations: the loader
 * checks each kfunc's local prototype against the kernel's, and a forward declaration does not
 * match a struct.
 */
struct sock {};
struct ack_sample {};

/* include/net/tcp.h */
enum tcp_ca_event {
	CA_EVENT_TX_START,
	CA_EVENT_CWND_RESTART,
	CA_EVENT_COMPLETE_CWR,
	CA_EVENT_LOSS,
	CA_EVENT_ECN_NO_CE,
	CA_EVENT_ECN_IS_CE,
};

/* include/net/inet_connection_sock.h: icsk_ca_priv is the congestion control's private area. */
struct inet_connection_sock {
	u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

/* include/linux/tcp.h */
struct tcp_sock {
	u32 snd_cwnd;
	u32 snd_ssthresh;
	u32 prior_cwnd; /* cwnd when the last reduction began: what ssthresh() saw */
} __attribute__((preserve_access_index));

/*
 * net/ipv4/tcp_cubic.c: cubic's per-connection state, which lives in icsk_ca_priv. Only the
 * member this program rewrites is declared; CO-RE finds its offset in the kernel's BTF.
 */
struct bictcp {
	u32 last_max_cwnd;
} __attribute__((preserve_access_index));

/* include/net/tcp.h: the members this program fills in (the loader matches them by name). */
struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, u32 ack, u32 acked);
	void (*set_state)(struct sock *sk, u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
	void (*init)(struct sock *sk);
};

#endif
