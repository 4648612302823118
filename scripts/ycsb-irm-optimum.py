#!/usr/bin/env python3
"""Lower bound on page-cache misses per operation for the simulator's ycsb-b workload.

YCSB's scrambled zipfian draws are independent (the independent reference model), so the best
any demand-paging replacement policy can do in steady state is to keep the `mem_pages` most
probable pages resident (policy A0). This computes each page's access probability from the
same generator the simulator uses (crates/sim/src/workload/ycsb.rs: zipfian rank over 10^10
items, theta 0.99, FNV-1a-64 hashed onto the records, 4 records of 1 KiB per page): ranks below
`ranks` explicitly, the remaining mass spread uniformly (those ranks hash uniformly), and prints
1 - (probability mass of the top mem_pages pages).

usage: scripts/ycsb-irm-optimum.py RECORDS MEM_PAGES [RANKS]
"""
import sys

MASK = (1 << 64) - 1
ZETAN_099 = 26.46902820178302  # YCSB's zeta(10^10, 0.99)


def fnvhash64(val):
    h = 0xCBF29CE484222325
    for _ in range(8):
        h ^= val & 0xFF
        val >>= 8
        h = (h * 1099511628211) & MASK
    if h >= 1 << 63:
        h -= 1 << 64
    return abs(h) & MASK  # Java Math.abs on a long


def main():
    records, mem_pages = int(sys.argv[1]), int(sys.argv[2])
    ranks = int(sys.argv[3]) if len(sys.argv) > 3 else 3_000_000
    pages = records // 4
    prob = [0.0] * pages
    head = 0.0
    for r in range(ranks):
        p = 1.0 / ((r + 1) ** 0.99) / ZETAN_099
        head += p
        prob[(fnvhash64(r) % records) // 4] += p
    uniform = (1.0 - head) / pages
    prob.sort(reverse=True)
    hit = sum(prob[:mem_pages]) + uniform * min(mem_pages, pages)
    print(f"records {records} pages {pages} mem_pages {mem_pages} "
          f"explicit-rank mass {head:.4f} optimal misses/op {1.0 - hit:.4f}")


if __name__ == "__main__":
    main()
