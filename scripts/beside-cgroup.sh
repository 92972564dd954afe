#!/bin/sh
# A cpu control group for the test phases that run beside another (make test, docs/testing.md,
# "Two phases at a time"): its tasks are idle to the rest of the machine (cpu.idle = 1: the group
# is scheduled as SCHED_IDLE against its siblings) and get no real-time budget
# (cpu.rt_runtime_us = 0, with the kernel's real-time group scheduling: a task in the group cannot
# become SCHED_RR or SCHED_FIFO — sched_setscheduler fails, and engine/internal/rt's Enable falls
# back to normal scheduling, so an emulating engine started beside stays idle too).
#
#   scripts/beside-cgroup.sh create NAME   the group's directory on stdout; nothing (exit 0) where
#                                           it cannot be made (not root, no cgroup v1 cpu hierarchy,
#                                           no real-time group scheduling, no cpu.idle): the caller
#                                           then falls back to `chrt --idle 0`. Groups of earlier
#                                           runs whose make is gone are removed first.
#   scripts/beside-cgroup.sh remove DIR    moves what is left in the group to its parent and
#                                           removes it (on success, failure and Ctrl-C alike).
#
# NAME is wirelab-test-<what>-<pid of the make recipe's shell>: the pid tells a stale group.
set -u
CPU=/sys/fs/cgroup/cpu

remove() {
	dir=$1
	[ -d "$dir" ] || return 0
	parent=$(dirname "$dir")
	i=0
	while [ $i -lt 50 ]; do
		# tasks, not cgroup.procs: a thread group leader that has exited but whose threads
		# have not is still a member
		for t in $(cat "$dir/tasks" 2>/dev/null); do
			echo "$t" >"$parent/tasks" 2>/dev/null
		done
		rmdir "$dir" 2>/dev/null && return 0
		i=$((i + 1))
		sleep 0.1
	done
	echo "beside-cgroup: could not remove $dir" >&2
	return 1
}

case "${1:-}" in
create)
	name=$2
	case "$name" in
	wirelab-test-*-[0-9]*) ;;
	*)
		echo "beside-cgroup: name $name: want wirelab-test-<what>-<pid>" >&2
		exit 2
		;;
	esac
	[ "$(id -u)" = 0 ] && [ -w "$CPU/cgroup.procs" ] && [ -f "$CPU/cpu.rt_runtime_us" ] &&
		[ -f "$CPU/cpu.idle" ] || exit 0
	for old in "$CPU"/wirelab-test-*-*; do
		[ -d "$old" ] || continue
		pid=${old##*-}
		kill -0 "$pid" 2>/dev/null || remove "$old"
	done
	dir=$CPU/$name
	mkdir "$dir" 2>/dev/null || exit 0
	if echo 0 >"$dir/cpu.rt_runtime_us" && echo 1 >"$dir/cpu.idle"; then
		echo "$dir"
	else
		remove "$dir"
	fi
	;;
remove)
	remove "$2"
	;;
*)
	echo "usage: $0 create NAME | remove DIR" >&2
	exit 2
	;;
esac
