#!/usr/bin/env python3
"""flush-calls-by-target-state.py TRACE: flush calls received per CPU, by what ran there when the handler started."""
import re, sys, collections
KT = re.compile(r'^(kworker|rcu_|ksoftirqd|migration|kswapd|cpuhp|watchdog|jbd2|kcompactd|khugepaged|swapper|idle_inject|kthreadd|oom_reaper|writeback|kblockd|zram|irq/|khungtaskd|kauditd|ext4|scsi_|loop)')
line_re = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(\w+):\s*(.*)$')
cnt = collections.Counter(); q = collections.Counter(); sw = collections.Counter()
for l in open(sys.argv[1]):
    m = line_re.match(l)
    if not m: continue
    comm, cpu, name, f = m.group(1), int(m.group(3)), m.group(6), m.group(7)
    if name == 'csd_function_entry' and 'flush_tlb_func' in f and 'csd=0000000000000000' not in f:
        k = 'idle' if comm == '<idle>' else 'kthread' if KT.match(comm) else ('worker' if comm == 'reclaimlab' else 'other user')
        cnt[(cpu, k)] += 1
    elif name == 'csd_queue_cpu' and 'flush_tlb_func' in f:
        q[int(f.split()[0][4:])] += 1
    elif name == 'sched_switch':
        nc = re.search(r'next_comm=(.*?) next_pid', f).group(1)
        sw[(cpu, 'to idle' if nc.startswith('swapper') else 'to kthread' if KT.match(nc) else 'to user')] += 1
for c in (0, 1):
    tot = sum(v for (cc, k), v in cnt.items() if cc == c)
    print(f"CPU {c}: calls queued to it {q[c]}, handlers run {tot}: " + ", ".join(f"{k} {cnt[(c,k)]}" for k in ('worker','idle','kthread','other user')) + "; switches " + ", ".join(f"{k} {sw[(c,k)]}" for k in ('to user','to idle','to kthread')))
