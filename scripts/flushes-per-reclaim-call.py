#!/usr/bin/env python3
"""flushes-per-reclaim-call.py TRACE [COMM]: a trace from seq-reader-flush-trace.sh, read for the
workload's threads (COMM, default reclaimlab):

- the kernel stacks of their TLB_REMOTE_SEND_IPI flushes (who sends the shootdowns);
- per shrink_inactive_list call (the folios __remove_mapping took between two
  mm_vmscan_lru_shrink_inactive events of one CPU), the IPI sends against the count the batched
  flush allows: one per 31 folios freed (shrink_folio_list's free batch) and a final one;
- the folios added to and removed from the page cache, by order, and per stolen page;
- how long each removed folio had been in the page cache, by order;
- with readahead/* events enabled, the readahead calls (page_cache_ra_order with order 0 is a
  miss's read-around)."""
import collections, re, sys

path = sys.argv[1]
who = sys.argv[2] if len(sys.argv) > 2 else 'reclaimlab'
head = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(.*)$')
stacks, sends_by_pages = collections.Counter(), collections.Counter()
calls = collections.Counter()
totals = collections.Counter()
added, removed, ra = collections.Counter(), collections.Counter(), collections.Counter()
since, ages = {}, collections.defaultdict(list)
cur = collections.defaultdict(lambda: [0, 0])  # per CPU: folios removed, sends, since the last call's end
last_send_ours = False
t_first = t_last = None
lines = open(path).read().split('\n')
i = 0
while i < len(lines):
    line = lines[i]
    i += 1
    m = head.match(line)
    if not m:
        continue
    comm, _pid, cpu, ts, rest = m.groups()
    cpu, ts = int(cpu), float(ts)
    if rest.startswith('<stack trace>'):
        frames = []
        while i < len(lines) and lines[i].startswith(' => '):
            frames.append(lines[i][4:].strip())
            i += 1
        if last_send_ours:
            frames = [f for f in frames if not f.startswith('trace_event')]
            stacks[' < '.join(frames[:8])] += 1
        continue
    if 'reason:remote IPI send' in rest:
        last_send_ours = comm == who
    if comm != who:
        continue
    t_first = ts if t_first is None else t_first
    t_last = ts
    name, _, fields = rest.partition(': ')
    if name == 'tlb_flush' and 'remote IPI send' in fields:
        sends_by_pages[fields.split()[0]] += 1
        cur[cpu][1] += 1
    elif name in ('mm_filemap_add_to_page_cache', 'mm_filemap_delete_from_page_cache'):
        d = dict(re.findall(r'(\w+)=(\S+)', fields))
        order, key = int(d['order']), (d['pfn'], d['ofs'])
        if name.startswith('mm_filemap_add'):
            added[order] += 1
            since[key] = ts
        else:
            removed[order] += 1
            cur[cpu][0] += 1
            if key in since:
                ages[order].append(ts - since.pop(key))
    elif name == 'mm_vmscan_lru_shrink_inactive':
        d = dict(re.findall(r'(\w+)=(\S+)', fields))
        freed, sent = cur[cpu]
        allowed = freed // 31 + (1 if freed % 31 else 0)
        calls[(min(allowed, 2), min(sent, 3))] += 1
        totals['calls'] += 1
        totals['scanned'] += int(d['nr_scanned'])
        totals['reclaimed'] += int(d['nr_reclaimed'])
        totals['folios freed'] += freed
        totals['sends in calls'] += sent
        totals['sends allowed'] += allowed
        cur[cpu] = [0, 0]
    elif name.startswith('page_cache_'):
        d = dict(re.findall(r'(\w+)=(\S+)', fields))
        ra[name + (' order 0' if name == 'page_cache_ra_order' and d.get('order') == '0' else '')] += 1

pages = lambda c: sum(n << o for o, n in c.items())
stolen = pages(removed)
print(f'{who}: {t_last - t_first:.3f} s of trace')
print('IPI sends by pages:', dict(sends_by_pages), 'total', sum(sends_by_pages.values()))
print('senders (kernel stack, innermost first):')
for s, n in stacks.most_common(10):
    print(f'  {n:7d}  {s}')
print('shrink_inactive_list calls:', dict(totals))
print('  calls by (sends the batch allows, capped at 2; sends seen, capped at 3):')
for k in sorted(calls):
    print(f'    allowed {k[0]} sent {k[1]}: {calls[k]}')
print('folios added by order:', sorted(added.items()), 'pages', pages(added))
print('folios removed by order:', sorted(removed.items()), 'pages', stolen)
if stolen:
    print(f'  per stolen page: folios {sum(removed.values()) / stolen:.4f}, '
          f'order-0 pages {removed[0] / stolen:.3f}, IPI sends {sum(sends_by_pages.values()) / stolen:.4f}')
print('time in the page cache of the removed folios (ms):')
for o in sorted(ages):
    a = sorted(ages[o])
    if len(a) < 20:
        continue
    q = lambda p: 1000 * a[int(p * (len(a) - 1))]
    print(f'  order {o}: {len(a)} folios, p10 {q(.1):.1f} median {q(.5):.1f} p90 {q(.9):.1f}, '
          f'under 20 ms {sum(x < 0.02 for x in a) / len(a):.2f}')
if ra:
    print('readahead calls:', dict(ra))
