#!/bin/sh
# Instructions per item on each in-memory path, counted by callgrind (issue 20): the
# difference of the instruction totals of two run lengths divided by the difference of the
# lengths, so that start-up, filling the queue and shutting down cancel out.
#
#   benches/instructions.sh            # every row (about 10 minutes)
#   benches/instructions.sh core       # the core rows only
#   benches/instructions.sh async      # the async rows only (tokio and smol)
#   benches/instructions.sh path       # the API's paths alone, on one task (exact)
#   KINDS="single pool" RUNTIMES=tokio benches/instructions.sh async   # some of them
#   KINDS=pool-bare RUNTIMES=tokio benches/instructions.sh async       # the pool without its
#                                      # item timeout, heartbeat and watchdog (what they cost)
#   RUNTIMES=tokio benches/instructions.sh keyed # the keyed push's path (path_keyed_bench)
#
# Core rows: `bench_summary --core SHAPE QUEUED N`, one push + receive + ack of a `u64`
# per iteration (N = 200,000 and 400,000; `batch16`: N items in batches of 16). Async rows: `bench_summary --one KIND RUNTIME N`,
# 1 producer and 4 consumers (N = 20,000 and 40,000 items); `single` is push -> receive ->
# ack one at a time, `batch` batches of 16, `pool` a Pool of 4 workers with a no-op handler,
# `flume` and `flume-handler` the channel baselines. Path rows: `bench_summary --path KIND
# RUNTIME N`, the same steps (`single`, `batch`) on one task with nobody waiting: the same
# count every run, to judge a change of the layer's own code by. Keyed path rows:
# `path_keyed_bench RUNTIME N` (examples/path_keyed_bench.rs, a binary of its own;
# KEYED_BIN=path runs that one unbuilt), the `single` path with a unique key on each push.
# The async rows run several threads, which callgrind serializes, and how often a consumer parks and is woken differs
# from run to run: they move by up to a third between runs, so each is run ASYNC_RUNS times
# (default 3) and the median printed with the range. The core rows are exact (the same
# count every run). Uses $CARGO_TARGET_DIR (default: target); BIN=path runs that binary of
# bench_summary instead, unbuilt (a copy kept as the baseline of a change).
set -eu
cd "$(dirname "$0")/.."
which="${1:-all}"
if [ -z "${BIN:-}" ]; then
    cargo build --release --example bench_summary >&2
fi
bin="${BIN:-${CARGO_TARGET_DIR:-target}/release/examples/bench_summary}"

# The total instructions of one run of bench_summary with the given arguments, less those of
# the TSC clock's calibration (`quanta::Clock::new`, run once at start-up): it spins for a
# stretch of wall time, so its count moved by up to 4 million instructions between runs,
# which the difference of two run lengths does not cancel (+-200 per item on the async rows).
count() {
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$@" >/dev/null 2>&1
    callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | awk '
        / PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
        /quanta::Clock::new \[/ { gsub(",", "", $1); calib = $1 }
        END { printf "%d\n", total - calib }'
    rm -f "$out"
}

# per_item LABEL N1 N2 ARGS...: the run length goes after ARGS; RUNS pairs of runs (1 unless
# set), the median printed with the range when there are several.
per_item() {
    label=$1 n1=$2 n2=$3
    shift 3
    all=""
    i=0
    while [ "$i" -lt "${RUNS:-1}" ]; do
        a=$(count "$@" "$n1")
        b=$(count "$@" "$n2")
        all="$all $(awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" \
            'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }')"
        i=$((i + 1))
    done
    echo "$all" | tr ' ' '\n' | grep . | sort -n | awk -v l="$label" '
        { v[NR] = $1 }
        END {
            if (NR == 1) printf "%-52s %8.1f\n", l, v[1]
            else printf "%-52s %8.1f  [%.1f-%.1f, %d runs]\n", l, v[int((NR + 1) / 2)], v[1], v[NR], NR
        }'
}

echo "instructions per item (callgrind, release, u64 items)"
if [ "$which" = all ] || [ "$which" = core ]; then
    for q in 1000 100000 1000000; do
        per_item "core push+receive+ack, $q queued" 200000 400000 --core plain $q
    done
    per_item "core with_id (the memory store's push), 1000 queued" 200000 400000 --core with_id 1000
    per_item "core with_id in batches of 16, 1000 queued" 200000 400000 --core batch16 1000
    for shape in levels8 keyed levels8_keyed; do
        for q in 1000 1000000; do
            per_item "core $shape, $q queued" 200000 400000 --core $shape $q
        done
    done
fi
if [ "$which" = all ] || [ "$which" = path ]; then
    for rt in ${RUNTIMES:-tokio smol}; do
        for kind in single batch; do
            RUNS="${PATH_RUNS:-2}" per_item "path $kind, $rt" 20000 40000 --path $kind $rt
        done
    done
fi
if [ "$which" = all ] || [ "$which" = keyed ]; then
    if [ -z "${KEYED_BIN:-}" ]; then
        cargo build --release --example path_keyed_bench >&2
    fi
    summary_bin=$bin
    bin="${KEYED_BIN:-${CARGO_TARGET_DIR:-target}/release/examples/path_keyed_bench}"
    for rt in ${RUNTIMES:-tokio smol}; do
        RUNS="${PATH_RUNS:-2}" per_item "path keyed, $rt" 20000 40000 $rt
    done
    bin=$summary_bin
fi
if [ "$which" = all ] || [ "$which" = async ]; then
    for rt in ${RUNTIMES:-tokio smol}; do
        for kind in ${KINDS:-single batch pool flume flume-handler}; do
            RUNS="${ASYNC_RUNS:-3}" per_item "$kind, $rt" 20000 40000 --one $kind $rt
        done
    done
fi
