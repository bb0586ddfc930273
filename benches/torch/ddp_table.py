"""The data-parallel runs of tools/device/ddp.sh (ddp.py's JSON lines) as Markdown tables.

  python ddp_table.py RESULTS.jsonl ...

Per workload and allocator, per rank: peak reserved / peak allocated, median step and its
ratio to the default allocator's on the same rank, whether the losses equal the default's,
and under vramkit what DDP's gradient buckets took; then how each job ended.
"""

from __future__ import annotations

import sys

from report import load, num


def main(paths):
    recs = [r for p in paths for r in load(p)]
    ranks = [r for r in recs if r.get("kind") == "ddp_rank"]
    jobs = [r for r in recs if r.get("kind") == "ddp_job"]
    default = {(r["workload"], r["rank"]): r for r in ranks
               if r.get("mode") == "default" and not r.get("error")}
    print("| workload | allocator | rank | GPU | reserved ÷ allocated | median step (ms) | vs default "
          "| losses = default's | DDP buckets (MB) / trainable (MB) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in ranks:
        if r.get("budget"):
            continue
        w, rank = r["workload"], r["rank"]
        if r.get("error"):
            print(f"| {w} | {r['mode']} | {rank} | {r.get('gpu', '—')} | {r['error'][:100]} |||||")
            continue
        base = default.get((w, rank))
        vs = num(r["median_ms"] / base["median_ms"], "{:.3f}") if base and base.get("median_ms") else "—"
        same = "—" if r["mode"] == "default" or not base else (
            "yes" if r.get("losses") == base.get("losses") else "no")
        buckets = "—"
        if r.get("ddp_wrap_in_use_bytes") is not None:
            buckets = f"{r['ddp_wrap_in_use_bytes'] / 1e6:.1f} / {r.get('trainable_bytes', 0) / 1e6:.1f}"
        print(f"| {w} | {r['mode']} | {rank} | {r.get('gpu', '—')} "
              f"| {num(r.get('ratio_reserved_allocated'), '{:.3f}')} | {num(r.get('median_ms'))} "
              f"| {vs} | {same} | {buckets} |")
    print()
    print("| workload | allocator | backend | ranks on GPUs | rank budget | ended | stopped after (s) | error |")
    print("|---|---|---|---|---|---|---|---|")
    for j in jobs:
        err = (j.get("error") or "").replace("|", "/").replace("\n", " ")[:300]
        print(f"| {j['workload']} | {j['mode']} | {j['backend']} | {j['world']} on {j['gpus']} "
              f"| {j.get('rank_budget') or '—'} | {j['status']} | {num(j.get('stop_s'), '{:.1f}')} "
              f"| {err or '—'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
