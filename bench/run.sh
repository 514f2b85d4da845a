#!/bin/sh
# Runs bench/rsocket_bench (builds nothing) and prints each rsocket row
# against the kernel row of the same benchmark (TCP; UDP for the Dgram
# rows), measured in the same run.
#
#   bench/run.sh [BINARY] [BENCHMARK FLAGS...]
#
# BINARY defaults to ./bench/rsocket_bench (run from the build directory);
# the flags go to the binary, e.g. --benchmark_min_time=1
# --benchmark_repetitions=3 (then the medians are compared) or
# --benchmark_filter=PingPong. The ratio is items/s of the row divided by
# items/s of the kernel row: above 1 is faster than the kernel (for
# PingPong, kernel round-trip time / this round-trip time).
set -u
BIN=./bench/rsocket_bench
if [ $# -gt 0 ]; then
  case $1 in
    -*) ;;
    *) BIN=$1; shift ;;
  esac
fi
if [ ! -x "$BIN" ]; then
  echo "run.sh: $BIN not found or not executable (build it: make bench/rsocket_bench)" >&2
  exit 2
fi
command -v python3 >/dev/null 2>&1 || { echo "run.sh: python3 not found" >&2; exit 2; }

OUT=$(mktemp "${TMPDIR:-/tmp}/rsocket_bench.XXXXXX.json") || exit 2
trap 'rm -f "$OUT"' EXIT
trap 'exit 130' INT TERM

"$BIN" --benchmark_format=json "$@" >"$OUT"
rc=$?
if [ ! -s "$OUT" ]; then
  echo "run.sh: $BIN produced no output (exit status $rc)" >&2
  exit 1
fi

python3 - "$OUT" <<'EOF'
import json, sys

with open(sys.argv[1]) as f:
    text = f.read()
try:
    data = json.loads(text)
except ValueError:
    # A run cut short leaves an unfinished document: keep what parsed.
    try:
        data = json.loads(text[: text.rfind("}") + 1] + "]}")
    except ValueError:
        data = {}
    print("run.sh: the benchmark output is incomplete (the run was cut short)")

ctx = data.get("context", {})
runs = data.get("benchmarks", [])

def key(b):
    name = b.get("run_name", b["name"])
    parts = [p for p in name.split("/") if p not in ("real_time", "manual_time")]
    return parts[0], parts[1] if len(parts) > 1 else "?"

# One result per (benchmark, transport): the median aggregate when there
# are repetitions, else the mean of the iteration runs.
rows, order, errors = {}, [], {}
has_median = {key(b) for b in runs
              if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
for b in runs:
    k = key(b)
    if k not in order:
        order.append(k)
    if b.get("error_occurred"):
        errors[k] = b.get("error_message", "error")
        continue
    if k in has_median:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median":
            rows[k] = [b]
        continue
    if b.get("run_type", "iteration") == "iteration":
        rows.setdefault(k, []).append(b)

def mean(lst, field):
    vals = [x[field] for x in lst if field in x]
    return sum(vals) / len(vals) if vals else None

def to_us(b):
    unit = b.get("time_unit", "ns")
    return b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]

print("rsocket_bench on %s (%s CPUs), %s" % (ctx.get("host_name", "?"), ctx.get("num_cpus", "?"),
                                             ctx.get("date", "")))
if has_median:
    print("repetitions: each row is the median of its repetitions")
if ctx.get("library_build_type") == "debug":
    print("note: libbenchmark reports a debug build (affects its overhead only)")
print()
hdr = "%-16s %-8s %12s %12s %14s %10s" % ("benchmark", "transport", "time/iter", "GB/s",
                                          "items/s", "vs kernel")
print(hdr)
print("-" * len(hdr))
status = 0
benches = []
for k in order:
    if k[0] not in benches:
        benches.append(k[0])
for bench in benches:
    ks = [k for k in order if k[0] == bench]
    ks.sort(key=lambda k: (k[1] != "kernel", k[1]))
    ref = rows.get((bench, "kernel"))
    ref_items = mean(ref, "items_per_second") if ref else None
    for k in ks:
        if k in errors and k not in rows:
            print("%-16s %-8s ERROR: %s" % (k[0], k[1], errors[k]))
            status = 1
            continue
        r = rows.get(k)
        if not r:
            continue
        us = sum(to_us(b) for b in r) / len(r)
        items = mean(r, "items_per_second")
        bps = mean(r, "bytes_per_second")
        ratio = "-"
        if ref_items and items:
            ratio = "%.2fx" % (items / ref_items)
        t = "%.2f us" % us if us < 1e4 else "%.2f ms" % (us / 1e3)
        print("%-16s %-8s %12s %12s %14s %10s" % (
            k[0], k[1], t, "%.3f" % (bps / 1e9) if bps else "-",
            "%.0f" % items if items else "-", ratio))
print()
print("vs kernel: items/s of the row / items/s of the kernel row of the same benchmark,")
print("same run; above 1 is faster than the kernel (TCP; UDP for the Dgram rows). PingPong GB/s")
print("counts both directions.")
sys.exit(status)
EOF
prc=$?
[ "$rc" -eq 0 ] || { echo "run.sh: $BIN exited with status $rc" >&2; exit "$rc"; }
exit "$prc"
