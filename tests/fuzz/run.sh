#!/usr/bin/env bash
# run.sh FUZZ_DIR BIN_DIR SECONDS TARGET...: runs each libFuzzer target for
# SECONDS from its seed corpus (FUZZ_DIR/corpus/TARGET, copied to a
# temporary directory: the repository stays as it is; new inputs are kept
# only with FUZZ_KEEP=DIR) with its dictionary (FUZZ_DIR/TARGET.dict) if
# any. One line per target: "fuzz TARGET: PASS|FAIL, runs, cov, ft"; a
# failure prints the report and keeps the input that caused it in
# $FUZZ_ARTIFACTS (default: the temporary directory, kept then). Exit
# status: the number of failed targets (0: none).
set -uo pipefail
fuzz_dir=$1 bin_dir=$2 secs=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/slipstream-fuzz.XXXXXX")
failed=0
for t in "$@"; do
  corpus=$work/$t
  mkdir -p "$corpus"
  [ -d "$fuzz_dir/corpus/$t" ] && cp "$fuzz_dir/corpus/$t"/* "$corpus"/ 2>/dev/null
  args=(-max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 -print_final_stats=1
        -artifact_prefix="${FUZZ_ARTIFACTS:-$work}/$t-")
  [ -f "$fuzz_dir/$t.dict" ] && args+=(-dict="$fuzz_dir/$t.dict")
  log=$work/$t.log
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} SLIPSTREAM_LOG_LEVEL=${SLIPSTREAM_LOG_LEVEL:-0} \
    "$bin_dir/$t" "${args[@]}" "$corpus" >"$log" 2>&1
  status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  if [ $status -eq 0 ] && ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
    echo "fuzz $t: PASS, ${runs:-?} runs in ${secs} s, cov ${cov:-?}, ft ${ft:-?}"
  else
    echo "fuzz $t: FAIL (exit $status), ${runs:-?} runs, cov ${cov:-?}, ft ${ft:-?}; log $log"
    grep -n -B2 -A30 -E 'ERROR: |runtime error:|==[0-9]+== ' "$log" | head -60
    failed=$((failed + 1))
  fi
  [ -n "${FUZZ_KEEP:-}" ] && mkdir -p "$FUZZ_KEEP/$t" && cp "$corpus"/* "$FUZZ_KEEP/$t"/ 2>/dev/null
  rm -rf "$corpus"
done
[ $failed -eq 0 ] && rm -rf "$work"
exit $failed
