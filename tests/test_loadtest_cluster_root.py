"""`wirelab loadtest --cluster` with the real engine on one machine (root, about a minute): three `wirelab
worker`s, each in a network namespace of its own routed through the test's namespace (their machines), the
scheduler in the test's namespace. One worker runs the built-in server, two the generators — each behind an
emulated access link of its own, reaching the server through its worker's address. Checks: every stored
interval's request count is the generators' sum and its p90 the merged histograms' (loadmerge of the
generators' own lines, as their workers sent them back); the server sampled once per interval; a connection
from any other address refused by the server's relay; one generator's worker SIGKILLed mid-run → the run
failed `degraded`, exactly the intervals after the loss marked; `wirelab-engine gc` finds nothing; no
workers within the wait → one line, exit 2, nothing stored. Needs an isolated namespace (make test's)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import wirelab
from wirelab.errors import UsageError

pytestmark = [pytest.mark.root]

SPEC = """
[sweep]
name = "NAME"
[load]
page = "synthetic:4x1kB"
protocols = ["h2"]
network = { rtt = "10ms" }
server = { impl = "builtin" }
scenario = { start = 2, stages = [{ duration_s = STAGE, target = 6 }] }
think = { mean_s = 0.3 }
interval_s = 1
thresholds = ["errors == 0"]
"""
TARGET = """
[sweep]
name = "target"
[load]
protocols = ["h2"]
network = { rtt = "10ms" }
scenario = { start = 2, stages = [{ duration_s = 4, target = 4 }] }
think = { mean_s = 0.3 }
interval_s = 1
thresholds = ["errors == 0"]
[load.target]
url = "https://h2.wirelab.test/L/fixture/"
"""
WORKERS = ("gen-0", "gen-1", "srv")


def _ip(*args: str, ns: int | None = None) -> None:
    argv = ["ip", *args] if ns is None else ["nsenter", "-t", str(ns), "-n", "ip", *args]
    subprocess.run(argv, check=True, capture_output=True, text=True)


def _isolated() -> bool:
    """Whether this namespace holds nothing but loopback (make test's unshare --net): the test adds links."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]


@contextlib.contextmanager
def namespaced_cluster(
    engine: Path, tmp: Path
) -> Iterator[tuple[str, dict[str, subprocess.Popen[str]], dict[str, str]]]:
    """A scheduler here and one `wirelab worker` per name of WORKERS, each in a namespace of its own
    (veth to this namespace, 10.199.i.2/24, default route here; this namespace forwards between them).
    Yields the scheduler's address, the worker processes and each worker's address."""
    import dask
    from distributed import Client
    from distributed import LocalCluster as DaskLocalCluster

    from wirelab._cluster import QUIET_DASK

    (tmp / "keep").mkdir(exist_ok=True)
    holders: list[subprocess.Popen[str]] = []
    procs: dict[str, subprocess.Popen[str]] = {}
    addrs: dict[str, str] = {}
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
    try:
        for i, name in enumerate(WORKERS, start=1):
            holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "600"], text=True)
            holders.append(holder)
            for _ in range(100):  # the holder's namespace exists once unshare exec'd sleep
                if os.readlink(f"/proc/{holder.pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                    break
                time.sleep(0.02)
            _ip("link", "add", f"wl{i}", "type", "veth", "peer", "name", "eth0", "netns", str(holder.pid))
            _ip("addr", "add", f"10.199.{i}.1/24", "dev", f"wl{i}")
            _ip("link", "set", f"wl{i}", "up")
            _ip("link", "set", "lo", "up", ns=holder.pid)
            _ip("addr", "add", f"10.199.{i}.2/24", "dev", "eth0", ns=holder.pid)
            _ip("link", "set", "eth0", "up", ns=holder.pid)
            _ip("route", "add", "default", "via", f"10.199.{i}.1", ns=holder.pid)
            addrs[name] = f"10.199.{i}.2"
        dask.config.set({"distributed.admin.tick.interval": QUIET_DASK["distributed.admin.tick.interval"]})
        scheduler = DaskLocalCluster(
            n_workers=0,
            processes=False,
            protocol="tcp://",
            host="10.199.1.1",
            dashboard_address="10.199.1.1:0",
        )
        try:
            for holder, name in zip(holders, WORKERS, strict=True):
                argv = [
                    "nsenter",
                    "-t",
                    str(holder.pid),
                    "-n",
                    "--",
                    sys.executable,
                    "-m",
                    "wirelab.cli",
                    "worker",
                ]
                argv += ["--scheduler", scheduler.scheduler_address, "--name", name, "--engine", str(engine)]
                argv += ["--no-calibrate", "--keep-dir", str(tmp / "keep" / name)]
                with open(tmp / f"{name}.log", "w") as log:
                    procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True)
            with Client(scheduler.scheduler_address, set_as_default=False) as client:
                deadline = time.monotonic() + 120
                while len(client.scheduler_info(n_workers=-1)["workers"]) < len(WORKERS):
                    for name, p in procs.items():
                        assert p.poll() is None, (
                            f"worker {name} exited: {(tmp / f'{name}.log').read_text()[-2000:]}"
                        )
                    assert time.monotonic() < deadline, "the workers did not connect within 120 s"
                    time.sleep(0.1)
            yield scheduler.scheduler_address, procs, addrs
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs.values():
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            scheduler.close()
    finally:
        for holder in holders:  # its namespace, and the veth ends in it, go with it
            holder.kill()
            holder.wait()


def _merged_p90(engine: Path, spec: Path, files: dict[str, Path]) -> list[float | None]:
    """Each interval's page p90 as loadmerge reads it from the generators' merged HDR histograms."""
    out = subprocess.run(
        [str(engine), "loadmerge", "--spec", str(spec), *(f"{n}={p}" for n, p in files.items())],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    return [(line.get("page_ms") or {}).get("p90") for line in lines if line.get("event") == "interval"]


def test_two_generators_on_workers_one_server_worker_merged_exactly_then_one_lost(tmp_path, real_engine):
    engine = real_engine("loadtest")
    if not _isolated():
        pytest.skip("adds links to its namespace: run it isolated (unshare --net, as make test does)")
    with namespaced_cluster(engine, tmp_path) as (address, procs, addrs):
        # 1. complete: the stored intervals are the generators' merge; meanwhile this namespace (not a
        # generator's) knocks at the server's address: the relay refuses it
        db = tmp_path / "w.db"
        spec = SPEC.replace("NAME", "two").replace("STAGE", "5")
        done = threading.Event()

        def knock() -> None:
            while not done.wait(0.3):
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection((addrs["srv"], 443), timeout=1) as s,
                ):
                    s.recv(1)

        knocker = threading.Thread(target=knock, daemon=True)
        knocker.start()
        try:
            summary = wirelab.loadtest(
                spec,
                db=db,
                engine=engine,
                generators=2,
                cluster=address,
                server_worker="srv",
                wait_workers=30,
            )
        finally:
            done.set()
            knocker.join(5)
        assert summary.ok, summary.lines()
        with wirelab.open(db) as results:
            run = results.loadtests("two").iloc[0]
            intervals = results.load_intervals("two")
            samples = results.server_samples("two")
        assert run["status"] == "complete" and intervals["pages"].sum() == run["pages"] > 0
        assert (intervals["degraded"] == 0).all()
        run_dir = Path(str(db) + ".d") / "two" / run["loadtest_id"]
        files = {g: run_dir / "generators" / f"{g}.jsonl" for g in ("gen-0", "gen-1")}
        own = {g: [json.loads(x) for x in f.read_text().splitlines()] for g, f in files.items()}
        p90 = _merged_p90(engine, run_dir / "spec.json", files)
        for row in intervals.to_dict("records"):
            i = row["interval_index"]
            lines = [own[g][i] for g in own if i < len(own[g]) and own[g][i].get("event") == "interval"]
            assert row["hits"] == sum(line["hits"] for line in lines), row
            assert [g["name"] for g in json.loads(row["generators_json"])] == ["gen-0", "gen-1"]
            if row["pages"]:
                assert row["page_p90_ms"] == pytest.approx(p90[i], abs=1e-6), (i, row["page_p90_ms"], p90[i])
        assert all(
            own[g][-1].get("event") == "summary" and own[g][-1]["part"] == f"{k}/2" for k, g in enumerate(own)
        )
        assert len(samples) == len(intervals) and samples["cpu_ms"].sum() > 0
        served = json.loads((run_dir / "server" / "serve.json").read_text())
        assert served["relay"]["accepted"] >= 2 and sorted(served["allow_from"]) == sorted(
            [addrs["gen-0"] + "/32", addrs["gen-1"] + "/32"]
        )
        assert served["relay"]["refused"] >= 1 and served["relay"]["refused_from"] == ["10.199.3.1"], served
        made = _namespaces(run_dir)

        # 2. an external target over the cluster (a site of each generator's local internet): no server
        # task, each generator its own access link and egress router, merged the same way
        db3 = tmp_path / "target.db"
        summary = wirelab.loadtest(
            TARGET, db=db3, engine=engine, generators=2, cluster=address, wait_workers=30
        )
        assert summary.ok, summary.lines()
        with wirelab.open(db3) as results:
            run = results.loadtests("target").iloc[0]
            intervals = results.load_intervals("target")
        assert run["status"] == "complete" and run["pages"] > 0 and (intervals["degraded"] == 0).all()
        run_dir = Path(str(db3) + ".d") / "target" / run["loadtest_id"]
        own = {
            g: [json.loads(x) for x in (run_dir / "generators" / f"{g}.jsonl").read_text().splitlines()]
            for g in ("gen-0", "gen-1")
        }
        for row in intervals.to_dict("records"):
            i = row["interval_index"]
            assert row["hits"] == sum(
                own[g][i]["hits"] for g in own if own[g][i].get("event") == "interval"
            ), row
        assert all(own[g][-1].get("event") == "summary" for g in own)
        assert json.loads((run_dir / "cluster.json").read_text())["server"] is None
        made += _namespaces(run_dir)

        # 3. one generator's worker SIGKILLed mid-run: degraded, the intervals after the loss marked
        db2 = tmp_path / "lost.db"
        killed: dict[str, float] = {}

        def kill_gen1() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not killed:
                files = list(Path(str(db2) + ".d").glob("lost/*/generators/gen-1.jsonl"))
                if files and len(files[0].read_text().splitlines()) >= 2:
                    procs["gen-1"].send_signal(signal.SIGKILL)
                    killed["at"] = time.monotonic()
                time.sleep(0.1)

        killer = threading.Thread(target=kill_gen1, daemon=True)
        killer.start()
        spec = SPEC.replace("NAME", "lost").replace("STAGE", "6")
        summary = wirelab.loadtest(
            spec, db=db2, engine=engine, generators=2, cluster=address, server_worker="srv", wait_workers=30
        )
        killer.join(5)
        assert killed, "generator gen-1 was not killed mid-run"
        assert not summary.ok
        with wirelab.open(db2) as results:
            run = results.loadtests("lost").iloc[0]
            intervals = results.load_intervals("lost")
        assert run["status"] == "failed" and "degraded" in run["error"], run["error"]
        run_dir = Path(str(db2) + ".d") / "lost" / run["loadtest_id"]
        reported = len(
            [
                x
                for x in (run_dir / "generators" / "gen-1.jsonl").read_text().splitlines()
                if '"interval"' in x
            ]
        )
        assert 2 <= reported < len(intervals)
        assert list(intervals["degraded"]) == [int(i >= reported) for i in range(len(intervals))]
        assert set(intervals[intervals["degraded"] == 1]["generators_lost"]) == {"gen-1"}
        made += _namespaces(run_dir)

    # nothing of either run left: no namespace, and gc finds none of them
    assert len(made) >= 4, made
    gc = subprocess.run([str(engine), "gc"], capture_output=True, text=True, check=True)
    for name in made:
        assert not Path("/run/netns", name).exists(), f"namespace {name} left"
        assert name.rsplit("-", 1)[0] not in gc.stdout, gc.stdout


def test_no_workers_within_the_wait_is_one_line_and_stores_nothing(tmp_path, real_engine):
    from distributed import LocalCluster

    engine = real_engine("loadtest")
    with LocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address="127.0.0.1:0"
    ) as scheduler:
        db = tmp_path / "w.db"
        spec = SPEC.replace("NAME", "none").replace("STAGE", "2")
        with pytest.raises(UsageError) as e:
            wirelab.loadtest(
                spec, db=db, engine=engine, generators=2, cluster=scheduler.scheduler_address, wait_workers=1
            )
    msg = str(e.value)
    assert "\n" not in msg and "no wirelab worker connected" in msg and "within 1 s" in msg, msg
    assert not db.exists()


def _namespaces(run_dir: Path) -> list[str]:
    """The namespaces the run's tasks created (their records' provenance)."""
    names: list[str] = []
    for record in [run_dir / "server" / "serve.json", *run_dir.glob("generators/*/loadtest.json")]:
        if record.exists():
            names += (json.loads(record.read_text())["provenance"].get("namespaces") or "").split()
    return names
