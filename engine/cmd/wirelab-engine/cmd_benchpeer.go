package main

import "github.com/wirelab/wirelab/engine/bench"

func init() {
	register("bench-peer", command{
		Summary: "(internal) traffic peer of `bench link`, run inside a namespace",
		Run:     bench.PeerMain,
	})
}
