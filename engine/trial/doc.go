// Package trial runs one trial end to end — the engine's side of docs/trial-contract.md.
//
// A trial is one configuration (page, network profile, server and client knobs) and all its
// protocols × repetitions:
//
//	spec, err := trial.DecodeSpec(data)  // strict JSON: unknown fields, types, ranges (*fielderr.Error)
//	p, err := trial.Prepare(spec)        // page, shards, profile, traces, kernel; nothing created yet
//	res, err := trial.Run(ctx, p, trial.Options{OutDir: dir, Progress: os.Stdout})
//
// Run builds one topology (one origin address per shard) and its emulated path
// (engine/emulator, packet log on), starts one `wirelab-engine serve` in the server namespace for
// every origin and the DNS server at 10.77.2.53, and waits for its ready line. Then, for each load
// of the sequence (Sequence: alternate or seeded random order, gap_ms apart), it runs a fresh
// `wirelab-engine fetch` in the client namespace — a new process, so no connection, TLS session or
// name survives from one load to the next — waits until the link has settled, takes the load's
// packets from the packet log (Own: only the flows the load opened) and appends the load's Record
// (loader fields from fetch's JSON, wire fields from pktlog.Summarize) to loads.jsonl. Last it
// stops the server and the emulator and writes trial.json atomically.
//
// The emulator makes this process real-time while it runs (docs/network.md): the work Run does
// between a load's start and its end is only waiting for the fetch process; records, HAR files
// (written by fetch) and pcap rotation happen while the link is idle.
package trial
