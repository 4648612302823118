#!/usr/bin/env python3
"""schedule-irqs-off-race.py TRACE [CPU]: switches from a user task to idle/kthread on CPU, and whether a flush
call queued before the switch entered its handler after it (the CPU then takes flushes while idle)."""
import re, sys, statistics as st
KT = re.compile(r'^(kworker|rcu_|ksoftirqd|migration|kswapd|cpuhp|watchdog|jbd2|kcompactd|khugepaged|swapper|idle_inject|kthreadd|oom_reaper|writeback|kblockd|zram|irq/|khungtaskd|kauditd|ext4|scsi_)')
line_re = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):\s*(.*)$')
# x86-tsc traces: scale from the two trace_marker lines (t0/t1 carry CLOCK_REALTIME ns)
raw = open(sys.argv[1]).read().splitlines()
marks = [(float(m.group(4)), int(m.group(6).split()[1])) for m in (line_re.match(l) for l in raw) if m and m.group(5) == 'tracing_mark_write' and m.group(6).startswith('t')]
scale = 1e6
first = next(m for m in (line_re.match(l) for l in raw) if m)
if len(marks) == 2 and '.' not in first.group(4):
    scale = (marks[1][1] - marks[0][1]) / 1e3 / (marks[1][0] - marks[0][0])
    print(f"x86-tsc: {1/scale:.4f} ticks per us")
cpu = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ev = []
for ln in raw:
    m = line_re.match(ln)
    if m: ev.append((float(m.group(4)) * scale, int(m.group(3)), m.group(1), int(m.group(2)), m.group(5), m.group(6)))
queued = []      # (ts) of csd_queue_cpu to `cpu` for flush_tlb_func
entries = []     # (ts, comm) of flush_tlb_func entries on `cpu`
switches = []    # (start_ts, switch_ts, prev, next)
start = None
for ts, c, comm, pid, name, f in ev:
    if name == 'csd_queue_cpu' and f.startswith(f'cpu={cpu} ') and 'flush_tlb_func' in f:
        queued.append(ts)
    if c != cpu: continue
    if name == 'rcu_utilization' and 'Start context switch' in f: start = ts
    elif name == 'csd_function_entry' and 'flush_tlb_func' in f and 'csd=0000000000000000' not in f:
        entries.append((ts, comm))
    elif name == 'sched_switch':
        pc = re.search(r'prev_comm=(.*?) prev_pid', f).group(1); nc = re.search(r'next_comm=(.*?) next_pid', f).group(1)
        switches.append((start, ts, pc, nc)); start = None
import bisect
user_ts = [ts for ts, c, comm, pid, name, f in ev if c == cpu and comm != '<idle>' and not KT.match(comm)]
eq = [e[0] for e in entries]
res = []
for i, (r, s, pc, nc) in enumerate(switches):
    if KT.match(pc) or not (KT.match(nc)): continue
    # until the next switch to a user task
    u = bisect.bisect_right(user_ts, s)
    end = user_ts[u] if u < len(user_ts) else None
    if end is None: continue
    j = bisect.bisect_right(eq, s); k = bisect.bisect_left(eq, end)
    idle_entries = k - j
    # last call queued before the switch, and the first entry after it
    qi = bisect.bisect_right(queued, s) - 1
    lastq = queued[qi] if qi >= 0 else None
    firste = eq[j] if j < len(eq) else None
    res.append(dict(r=r, s=s, pc=pc, nc=nc, end=end, idle_entries=idle_entries, sec=(s - r) if r else None,
                    lastq=(s - lastq) if lastq else None, firste=(firste - s) if firste else None))
raced = [x for x in res if x['idle_entries'] > 0]
print(f"switches user->idle/kthread on CPU {cpu}: {len(res)}, followed by flushes taken while not running a user task: {len(raced)}")
secs = [x['sec'] for x in res if x['sec'] is not None]
print(f"Start context switch -> sched_switch (us): median {st.median(secs):.1f}, mean {st.mean(secs):.2f}, min {min(secs):.0f}, max {max(secs):.0f}")
span = ev[-1][0] - ev[0][0]
t_init = sum(x['end'] - x['s'] for x in raced)
print(f"trace span {span/1e6:.3f} s; time after raced switches until next user task: {t_init/1e6:.3f} s")
print(f"flush entries on CPU {cpu}: {len(entries)} ({sum(1 for e in entries if e[1]=='<idle>')} in idle)")
for x in res[:60]:
    print(f"{x['pc'][:16]:>16} -> {x['nc'][:12]:<12} sec {x['sec']} lastq-before-switch {x['lastq']} first-entry-after {x['firste']} idle-entries {x['idle_entries']} until-next-user {(x['end']-x['s'])/1e3:.2f} ms")

# classify by whether a call was queued inside the section [R, S] or shortly before it
def q_in(a, b):
    i = bisect.bisect_left(queued, a); return i < len(queued) and queued[i] <= b
rows = {}
for x in res:
    if x['sec'] is None: continue
    r, s = x['r'], x['s']
    cls = 'queued in [R,S]' if q_in(r, s) else ('queued in [R-3us,R)' if q_in(r - 3, r - 1e-9) else 'none queued in [R-3us,S]')
    rows.setdefault(cls, []).append(x['idle_entries'] > 0)
for k, v in rows.items():
    print(f"{k}: {len(v)} switches, {sum(v)} raced")
