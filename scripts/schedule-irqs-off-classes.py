#!/usr/bin/env python3
"""schedule-irqs-off-classes.py TRACE...: __schedule's interrupts-off section by path, 'Start context switch'
(rcu_note_context_switch, right after local_irq_disable) to sched_switch, in us; x86-tsc traces
scaled by their two trace_marker lines (t0/t1 carry CLOCK_REALTIME ns)."""
import re, sys, statistics as st
KT = re.compile(r'^(kworker|rcu_|ksoftirqd|migration|kswapd|cpuhp|watchdog|jbd2|kcompactd|khugepaged|swapper|idle_inject|kthreadd|oom_reaper|writeback|kblockd|zram|irq/|khungtaskd|kauditd|ext4|scsi_)')
line_re = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):\s*(.*)$')
cls, se = {}, []
for path in sys.argv[1:]:
    ms = [m for m in (line_re.match(l) for l in open(path)) if m]
    marks = [(float(m.group(4)), int(m.group(6).split()[1])) for m in ms if m.group(5) == 'tracing_mark_write']
    scale = (marks[1][1] - marks[0][1]) / 1e3 / (marks[1][0] - marks[0][0])
    print(f"{path}: {1/scale:.4f} TSC ticks per us")
    start = {}
    for m in ms:
        ts, cpu, name, f = float(m.group(4)) * scale, int(m.group(3)), m.group(5), m.group(6)
        if name == 'rcu_utilization' and f.startswith('Start context switch'): start[cpu] = ts
        elif name == 'rcu_utilization' and f.startswith('End context switch') and cpu in start: se.append(ts - start[cpu])
        elif name == 'sched_switch' and cpu in start:
            pc = re.search(r'prev_comm=(.*?) prev_pid', f).group(1); nc = re.search(r'next_comm=(.*?) next_pid', f).group(1)
            k = ('kthread' if KT.match(pc) else 'user') + (' preempted' if 'prev_state=R' in f else ' sleeps') + ' -> ' + ('idle' if nc.startswith('swapper') else 'kthread' if KT.match(nc) else 'user')
            cls.setdefault(k, []).append(ts - start.pop(cpu))
for k, v in sorted(cls.items()):
    print(f"{k:32} n={len(v):5} median {st.median(v):.2f} mean {st.mean(v):.2f} us")
print(f"Start -> End context switch (one trace event and rcu_note_context_switch's body): n={len(se)} median {st.median(se):.2f} mean {st.mean(se):.2f} us")
