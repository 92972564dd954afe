// SPDX-License-Identifier: GPL-2.0
/*
 * wl_drop_once: a tc (tcx) program for the router of the TCP+ backoff measurement. Once armed
 * from user space, it drops exactly one TCP data segment towards port wl_dport — the next one
 * it sees — and passes everything else, retransmissions included. Written for wirelab.
 *
 * Slots of wl_drop_state (u32 each):
 *   ARMED      user space writes 1; the program moves it 1 → 2 (compare-and-swap) as it drops
 *   DROPPED    segments dropped (1 after a measurement)
 *   DATA_SEEN  data segments towards wl_dport
 *   GSO_SEEN   of which aggregates (more than one segment per packet), which it never drops
 *   DROP_SEQ   TCP sequence number of the dropped segment
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

enum { SLOT_ARMED, SLOT_DROPPED, SLOT_DATA_SEEN, SLOT_GSO_SEEN, SLOT_DROP_SEQ, SLOT_COUNT };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLOT_COUNT);
	__type(key, __u32);
	__type(value, __u32);
} wl_drop_state SEC(".maps");

/* Destination port of the measured flow, host byte order; set by the loader. */
volatile const __u16 wl_dport = 0;

static __always_inline __u32 *slot(__u32 key)
{
	return bpf_map_lookup_elem(&wl_drop_state, &key);
}

SEC("tc")
int wl_drop_once(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct tcphdr *tcp;
	__u32 ihl, *armed, *counter;
	int payload;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP)
		return TC_ACT_UNSPEC;
	ihl = ip->ihl * 4;
	if (ihl < sizeof(*ip))
		return TC_ACT_UNSPEC;
	tcp = (void *)ip + ihl;
	if ((void *)(tcp + 1) > end || tcp->dest != bpf_htons(wl_dport))
		return TC_ACT_UNSPEC;
	payload = (int)bpf_ntohs(ip->tot_len) - (int)ihl - (int)tcp->doff * 4;
	if (payload <= 0)
		return TC_ACT_UNSPEC;

	counter = slot(SLOT_DATA_SEEN);
	if (counter)
		__sync_fetch_and_add(counter, 1);
	if (skb->gso_segs > 1) {
		counter = slot(SLOT_GSO_SEEN);
		if (counter)
			__sync_fetch_and_add(counter, 1);
		return TC_ACT_UNSPEC;
	}

	armed = slot(SLOT_ARMED);
	if (!armed || __sync_val_compare_and_swap(armed, 1, 2) != 1)
		return TC_ACT_UNSPEC;
	counter = slot(SLOT_DROPPED);
	if (counter)
		__sync_fetch_and_add(counter, 1);
	counter = slot(SLOT_DROP_SEQ);
	if (counter)
		*counter = bpf_ntohl(tcp->seq);
	return TC_ACT_SHOT;
}
