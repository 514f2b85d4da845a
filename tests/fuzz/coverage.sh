#!/usr/bin/env bash
# coverage.sh BIN_DIR CORPUS_DIR TARGET...: line coverage of each
# target's parser files (llvm-cov) after running the target once over its
# corpus (CORPUS_DIR/TARGET). BIN_DIR holds the targets built with
# clang's source-based coverage (`make fuzz-coverage` configures it).
# Prints one line per file: "TARGET FILE: lines covered/total (percent),
# regions covered/total".
set -uo pipefail
bin=$1 corpus=$2
shift 2
LLVM_PROFDATA=${LLVM_PROFDATA:-llvm-profdata-14}
LLVM_COV=${LLVM_COV:-llvm-cov-14}
work=$(mktemp -d "${TMPDIR:-/tmp}/slipstream-fuzzcov.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The files whose parsing each target is for.
files_of() {
  case $1 in
    fuzz_config) echo src/core/base/config.cc src/core/base/config_parse.cc ;;
    fuzz_tcp_stream) echo src/core/prov/util/stream_endpoint.cc src/core/prov/util/region_table.cc ;;
    fuzz_shm_stream) echo src/core/prov/shm/shm_endpoint.cc src/core/prov/util/stream_endpoint.cc ;;
    fuzz_rsocket) echo src/librsocket/engine.cc src/librsocket/socket.cc src/librsocket/data.cc ;;
    fuzz_preload_rules) echo src/librsocket/preload_rules.cc ;;
    fuzz_dgram) echo src/librsocket/dgram_socket.cc src/librsocket/dgram_ring.cc ;;
    fuzz_net_frame) echo src/core/net/frame_parse.cc src/core/net/frame_build.cc src/core/net/checksum.cc ;;
    fuzz_udp_stack) echo src/core/net/udp_stack.cc ;;
    fuzz_vma_stats) echo src/libvmacompat/stats_reader.cc src/libvmacompat/stats_format.cc ;;
    fuzz_vma_conf) echo src/libvmacompat/rules_parse.cc src/libvmacompat/rules_match.cc ;;
  esac
}

for t in "$@"; do
  [ -d "$corpus/$t" ] || { echo "$t: no corpus at $corpus/$t"; continue; }
  LLVM_PROFILE_FILE=$work/$t.profraw SLIPSTREAM_LOG_LEVEL=0 ASAN_OPTIONS=detect_leaks=0 \
    "$bin/$t" -runs=0 "$corpus/$t" >"$work/$t.log" 2>&1
  "$LLVM_PROFDATA" merge -sparse "$work/$t.profraw" -o "$work/$t.profdata" || continue
  "$LLVM_COV" report "$bin/$t" -instr-profile="$work/$t.profdata" >"$work/$t.report" 2>/dev/null
  for f in $(files_of "$t"); do
    # Names are as the compiler saw them (relative to the build directory).
    awk -v t="$t" -v f="$f" 'index($1, f) && substr($1, length($1) - length(f) + 1) == f {
      print t, f ": lines", $8 - $9 "/" $8, "(" $10 "), regions", $2 - $3 "/" $2 }' "$work/$t.report"
  done
done
