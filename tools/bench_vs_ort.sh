#!/usr/bin/env bash
# Side-by-side CPU latency: ONNX Runtime (onnxruntime-node) vs. `npuc bench`.
# Run by hand; not part of the build or the tests.
#
#   tools/bench_vs_ort.sh [options] [MODEL.onnx ...]
#
# Without MODEL arguments, benchmarks every *.onnx in --dir (default models/zoo; create it with
# `/usr/bin/python3 tools/export_models.py`).
#
# Options:
#   --dir DIR        model directory (default: models/zoo)
#   --threads LIST   thread counts, comma separated (default: 1,2)
#   --runs K         timed runs per measurement (default: 20)
#   --warmup W       ORT warm-up runs (default: 3)
#   --npuc PATH      npuc binary (default: build/bin/npuc)
#   --no-npuc        ORT only
#   --no-ort         npuc only
#   --package T      time the simulator on the object package translated for target T (e.g. drpai: fp16)
#                    instead of the reference engine on the model
#   --rounds R       measure each model R times, ORT and npuc alternating (default: 1), and report each
#                    side's lowest median and lowest min: on a shared, noisy machine a slow spell then hits
#                    one round of one side, not the comparison
#
# ORT: onnxruntime-node@1.30.0 is installed into .bench/ (gitignored) on first use with
#   npm install --ignore-scripts --prefix .bench onnxruntime-node@1.30.0
# (--ignore-scripts: the CPU binaries ship in the package; the postinstall only fetches CUDA
# binaries). Sessions: intraOpNumThreads=N, interOpNumThreads=1, graphOptimizationLevel=all,
# executionMode=sequential; see tools/ort_bench.mjs.
# npuc: `npuc bench MODEL --threads N --runs K`, whose output must contain `median: X ms` and
# `min: Y ms`; anything else (missing binary, error) shows as n/a.
# ratio = npuc median / ORT median (< 1: npuc faster).

set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORT_VERSION="1.30.0"
DIR="$ROOT/models/zoo"
THREADS="1,2"
RUNS=20
ROUNDS=1
WARMUP=3
NPUC="$ROOT/build/bin/npuc"
DO_NPUC=1
DO_ORT=1
PACKAGE_TARGET=""
MODELS=()

usage() { sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --npuc) NPUC="$2"; shift 2 ;;
    --no-npuc) DO_NPUC=0; shift ;;
    --no-ort) DO_ORT=0; shift ;;
    --package) PACKAGE_TARGET="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done

if [ ${#MODELS[@]} -eq 0 ]; then
  if [ ! -d "$DIR" ]; then
    echo "no model directory $DIR (run: /usr/bin/python3 tools/export_models.py)" >&2
    exit 2
  fi
  shopt -s nullglob
  MODELS=("$DIR"/*.onnx)
  shopt -u nullglob
  if [ ${#MODELS[@]} -eq 0 ]; then echo "no *.onnx in $DIR" >&2; exit 2; fi
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
: > "$TMP/ort.tsv"

# ---------------------------------------------------------------- ORT
if [ "$DO_ORT" = 1 ]; then
  PKG="$ROOT/.bench/node_modules/onnxruntime-node/package.json"
  have=""
  [ -f "$PKG" ] && have="$(node -p "require('$PKG').version" 2>/dev/null || true)"
  if [ "$have" != "$ORT_VERSION" ]; then
    echo "installing onnxruntime-node@$ORT_VERSION into $ROOT/.bench ..." >&2
    npm install --ignore-scripts --no-audit --no-fund --prefix "$ROOT/.bench" \
      "onnxruntime-node@$ORT_VERSION" >&2 || { echo "npm install failed" >&2; exit 1; }
  fi
fi
ort_model() {  # model: appends its "ORT ..." lines (one per thread count) to $TMP/ort.tsv
  [ "$DO_ORT" = 1 ] || return 0
  echo "ORT: $(basename "$1") ..." >&2
  node "$ROOT/tools/ort_bench.mjs" --module "$ROOT/.bench" --threads "$THREADS" \
    --runs "$RUNS" --warmup "$WARMUP" "$1" | tee -a "$TMP/ort.tsv" >&2
}

# ---------------------------------------------------------------- npuc
npuc_one() {  # model threads -> "median min" or "n/a n/a"
  local out med min what="$1"
  if [ "$DO_NPUC" != 1 ] || [ ! -x "$NPUC" ]; then echo "n/a n/a"; return; fi
  if [ -n "$PACKAGE_TARGET" ]; then
    what="$TMP/pkg/$(basename "$1" .onnx)"
    if [ ! -d "$what" ]; then
      "$NPUC" translate "$(basename "$1" .onnx)" -onnx "$1" --target "$PACKAGE_TARGET" --out "$TMP/pkg" >/dev/null 2>&1 ||
        { echo "n/a n/a"; return; }
    fi
  fi
  set -- "$what" "$2"
  if command -v timeout >/dev/null; then
    out="$(timeout 900 "$NPUC" bench "$1" --threads "$2" --runs "$RUNS" 2>&1)"
  else
    out="$("$NPUC" bench "$1" --threads "$2" --runs "$RUNS" 2>&1)"
  fi
  med="$(printf '%s\n' "$out" | sed -n 's/.*median:[[:space:]]*\([0-9.eE+-]*\)[[:space:]]*ms.*/\1/p' | head -n1)"
  min="$(printf '%s\n' "$out" | sed -n 's/.*min:[[:space:]]*\([0-9.eE+-]*\)[[:space:]]*ms.*/\1/p' | head -n1)"
  echo "${med:-n/a} ${min:-n/a}"
}

if [ "$DO_NPUC" = 1 ] && [ ! -x "$NPUC" ]; then
  echo "npuc binary $NPUC not found: npuc columns will be n/a" >&2
fi

lower() {  # the lower of two figures, either of which may be n/a
  awk -v a="$1" -v b="$2" 'BEGIN { na = a ~ /^[0-9.eE+-]+$/; nb = b ~ /^[0-9.eE+-]+$/
    if (na && nb) print (a + 0 <= b + 0 ? a : b); else if (na) print a; else print b }'
}

# ---------------------------------------------------------------- measure (rounds: ORT then npuc, per model)
: > "$TMP/npuc.tsv"
for ((r = 1; r <= ROUNDS; r++)); do
  [ "$ROUNDS" -gt 1 ] && echo "round $r of $ROUNDS" >&2
  for m in "${MODELS[@]}"; do
    ort_model "$m"
    for t in ${THREADS//,/ }; do
      if [ "$DO_NPUC" = 1 ]; then
        echo "npuc: $(basename "$m" .onnx) threads=$t ..." >&2
        read -r nmed nmin < <(npuc_one "$m" "$t")
        printf 'NPUC\t%s\t%s\t%s\t%s\n' "$(basename "$m" .onnx)" "$t" "$nmed" "$nmin" >> "$TMP/npuc.tsv"
      fi
    done
  done
done

# ---------------------------------------------------------------- table
printf '\n%-16s %7s %12s %12s %12s %12s %9s %10s\n' \
  model threads ort_med_ms ort_min_ms npuc_med_ms npuc_min_ms npuc/ort ort_maxdiff
for m in "${MODELS[@]}"; do
  base="$(basename "$m" .onnx)"
  for t in ${THREADS//,/ }; do
    omed=n/a; omin=n/a; odiff=n/a; nmed=n/a; nmin=n/a
    while IFS=$'\t' read -r _ _ _ med min diff; do
      [ "$med" = error ] && continue
      omed="$(lower "$omed" "$med")"; omin="$(lower "$omin" "$min")"; odiff="$diff"
    done < <(awk -F'\t' -v b="$base" -v t="$t" '$1=="ORT" && $2==b && $3==t' "$TMP/ort.tsv")
    while IFS=$'\t' read -r _ _ _ med min; do
      nmed="$(lower "$nmed" "$med")"; nmin="$(lower "$nmin" "$min")"
    done < <(awk -F'\t' -v b="$base" -v t="$t" '$1=="NPUC" && $2==b && $3==t' "$TMP/npuc.tsv")
    ratio="$(awk -v n="$nmed" -v o="$omed" 'BEGIN {
      if (n ~ /^[0-9.eE+-]+$/ && o ~ /^[0-9.eE+-]+$/ && o + 0 > 0) printf "%.2f", n / o; else print "n/a" }')"
    printf '%-16s %7s %12s %12s %12s %12s %9s %10s\n' \
      "$base" "$t" "$omed" "$omin" "$nmed" "$nmin" "$ratio" "$odiff"
  done
done
