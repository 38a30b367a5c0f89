#!/bin/sh
# Captures syscalls, sched_switch, kmalloc and mm_page_alloc events with kernel stacks
# (options/stacktrace) for one dd process, in a private tracefs instance.
set -eu
T=/sys/kernel/tracing
I=$T/instances/kflame-test-$$
mkdir "$I"
trap 'echo 0 > "$I/tracing_on"; rmdir "$I"' EXIT
sh -c 'sleep 1; exec dd if=/dev/zero of=/tmp/kflame-dd.out bs=64k count=40 oflag=dsync' &
P=$!
echo 0 > "$I/tracing_on"
echo 4096 > "$I/buffer_size_kb"
echo "common_pid == $P" > "$I/events/raw_syscalls/sys_enter/filter"
echo "common_pid == $P" > "$I/events/raw_syscalls/sys_exit/filter"
echo "prev_pid == $P || next_pid == $P" > "$I/events/sched/sched_switch/filter"
echo "common_pid == $P" > "$I/events/kmem/kmalloc/filter"
echo "common_pid == $P" > "$I/events/kmem/mm_page_alloc/filter"
for e in raw_syscalls/sys_enter raw_syscalls/sys_exit sched/sched_switch kmem/kmalloc kmem/mm_page_alloc; do
  echo 1 > "$I/events/$e/enable"
done
echo 1 > "$I/options/stacktrace"
echo 1 > "$I/options/userstacktrace"
echo 1 > "$I/options/sym-userobj"
echo 1 > "$I/tracing_on"
wait $P
echo 0 > "$I/tracing_on"
cat "$I/trace"
for e in raw_syscalls/sys_enter raw_syscalls/sys_exit sched/sched_switch kmem/kmalloc kmem/mm_page_alloc; do
  echo 0 > "$I/events/$e/enable"
done
echo 0 > "$I/options/stacktrace"
echo 0 > "$I/options/userstacktrace"
echo 0 > "$I/options/sym-userobj"
rm -f /tmp/kflame-dd.out
