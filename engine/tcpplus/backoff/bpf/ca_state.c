// SPDX-License-Identifier: GPL-2.0
/*
 * wl_ca_state: a BPF iterator over the TCP sockets of the namespace that reads it. For each
 * socket towards port wl_dport it writes one record with what TCP_INFO does not report: the
 * cwnd at which the last reduction began (tcp_sock.prior_cwnd, the cwnd the congestion
 * control's ssthresh() saw) and cubic's W_max (bictcp.last_max_cwnd, which fast convergence
 * changes). Works for cubic and for wl_cubicp, which share cubic's state layout.
 * Written for wirelab.
 */
#include "../../bpf/kernel_types.h"

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

struct seq_file;

struct sock_common {
	__be16 skc_dport;
	__u16 skc_num;
} __attribute__((preserve_access_index));

struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__tcp {
	struct bpf_iter_meta *meta;
	struct sock_common *sk_common;
} __attribute__((preserve_access_index));

/* One record per matching socket, in host byte order. */
struct ca_record {
	__u32 local_port;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 prior_cwnd;
	__u32 last_max_cwnd;
};

/* Destination port of the measured flow, host byte order; set by the loader. */
volatile const __u16 wl_dport = 0;

SEC("iter/tcp")
int wl_ca_state(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;
	struct bictcp *ca;
	struct ca_record rec;

	if (!skc || skc->skc_dport != bpf_htons(wl_dport))
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	ca = (struct bictcp *)((struct inet_connection_sock *)tp)->icsk_ca_priv;
	rec.local_port = skc->skc_num;
	rec.cwnd = tp->snd_cwnd;
	rec.ssthresh = tp->snd_ssthresh;
	rec.prior_cwnd = tp->prior_cwnd;
	rec.last_max_cwnd = ca->last_max_cwnd;
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
