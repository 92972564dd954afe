// SPDX-License-Identifier: GPL-2.0
/*
 * wl_cubicp: CUBIC whose multiplicative decrease is that of n parallel connections — the
 * congestion-window part of TCP+ from "How Speedy is SPDY?" (Wang et al., NSDI 2014):
 *
 *	β' = 1 − (1 − β)/n		(β = cubic's 717/1024 ≈ 0.7 → β' ≈ 0.95 for n = 6)
 *
 * Provenance and licence: written for wirelab, GPL-2.0 because BPF congestion controls must be
 * GPL-compatible to call kernel functions. It contains no CUBIC code: every operation is
 * delegated to the kernel's own tcp_cubic through the functions it exports to BPF congestion
 * controls as kfuncs (net/ipv4/tcp_cubic.c, tcp_cubic_check_kfunc_ids). The delegation pattern
 * is the one of the kernel selftest tools/testing/selftests/bpf/progs/bpf_cc_cubic.c (GPL-2.0).
 * Because the code is the kernel's, n = 1 (β' = β) is plain cubic exactly.
 *
 * What β' touches (docs/tcpplus.md explains the choice):
 *   - ssthresh on loss: max(cwnd·β', 2) instead of cubic's max(cwnd·β, 2);
 *   - fast convergence: when a loss comes before the previous maximum was regained, cubic sets
 *     W_max = cwnd·(1+β)/2; we set cwnd·(1+β')/2, the plateau of n flows one of which backed off.
 *     (Left at (1+β)/2, W_max would sit below the new cwnd and cubic would skip its plateau.)
 * Untouched, and still right for the aggregate of n flows: the time K to regain W_max, which
 * the kernel computes from W_max − cwnd rather than from β (so it shrinks with the smaller
 * reduction), and the TCP-friendly region, whose slope uses cubic's global β.
 *
 * The loader sets wl_beta_plus and replaces the name "wl_cubicp" with "wl_cubicp<n>".
 */
#include "kernel_types.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

#define BETA_SCALE 1024U

/* β' scaled by BETA_SCALE; set by the loader. The default is cubic's own β (n = 1). */
volatile const u32 wl_beta_plus = 717;

extern void cubictcp_init(struct sock *sk) __ksym;
extern u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym;
extern void cubictcp_cong_avoid(struct sock *sk, u32 ack, u32 acked) __ksym;
extern void cubictcp_state(struct sock *sk, u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym;
extern u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

SEC("struct_ops")
void BPF_PROG(wl_init, struct sock *sk)
{
	cubictcp_init(sk);
}

SEC("struct_ops")
u32 BPF_PROG(wl_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct bictcp *ca = (struct bictcp *)icsk->icsk_ca_priv;
	u32 cwnd = tp->snd_cwnd;
	u64 ssthresh;

	/* Cubic's own bookkeeping: ends the epoch and records W_max with its β. */
	cubictcp_recalc_ssthresh(sk);

	/* Fast convergence happened iff cubic put W_max below the current cwnd. */
	if (ca->last_max_cwnd < cwnd)
		ca->last_max_cwnd = (u32)((u64)cwnd * (BETA_SCALE + wl_beta_plus) / (2 * BETA_SCALE));

	ssthresh = (u64)cwnd * wl_beta_plus / BETA_SCALE;
	return ssthresh > 2 ? (u32)ssthresh : 2;
}

SEC("struct_ops")
void BPF_PROG(wl_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	cubictcp_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
void BPF_PROG(wl_set_state, struct sock *sk, u8 new_state)
{
	cubictcp_state(sk, new_state);
}

SEC("struct_ops")
void BPF_PROG(wl_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	cubictcp_cwnd_event(sk, event);
}

SEC("struct_ops")
void BPF_PROG(wl_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	cubictcp_acked(sk, sample);
}

SEC("struct_ops")
u32 BPF_PROG(wl_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops wl_cubicp = {
	.init = (void *)wl_init,
	.ssthresh = (void *)wl_ssthresh,
	.cong_avoid = (void *)wl_cong_avoid,
	.set_state = (void *)wl_set_state,
	.cwnd_event = (void *)wl_cwnd_event,
	.pkts_acked = (void *)wl_pkts_acked,
	.undo_cwnd = (void *)wl_undo_cwnd,
	.name = "wl_cubicp",
};
