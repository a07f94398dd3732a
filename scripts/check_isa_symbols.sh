#!/usr/bin/env bash
# The kernels' instruction-set files (src/kernels/x86/*_{avx2,avx512,vnni,amx,f16c,vbmi}.cpp, compiled with -mavx2,
# -mavx512f, ...) must not define a weak function that any other object of the build also defines or calls: the
# linker keeps one copy of a weak (inline, template) function for the whole program, and if it keeps the copy built
# for AVX-512, code that runs on every CPU calls AVX-512 instructions — SIGILL on a CPU without them (it happened:
# std::vector<int8_t>::assign from an AVX-512 file, in the sanitizer build on an AVX2-only machine). Such files take
# raw pointers and leave containers, std::function and the thread pool to the baseline files (docs/kernels.md).
#
#   scripts/check_isa_symbols.sh BUILD_DIR      exit 1 and the symbols when there is one; needs nm and c++filt
set -u -o pipefail
BUILD="${1:?usage: check_isa_symbols.sh BUILD_DIR}"
OBJ="$BUILD/src/kernels/CMakeFiles/npuc_kernels.dir/x86"
[ -d "$OBJ" ] || { echo "check_isa_symbols: no kernel objects under $OBJ (build first)"; exit 2; }
mapfile -t isa < <(find "$OBJ" -name '*.o' | grep -E '_(avx2|avx512|vnni|amx|f16c|vbmi)\.cpp\.o$' | sort)
mapfile -t rest < <(find "$BUILD" -name '*.o' -path '*CMakeFiles*' | grep -vE '_(avx2|avx512|vnni|amx|f16c|vbmi)\.cpp\.o$' | sort)
[ ${#isa[@]} -gt 0 ] || { echo "check_isa_symbols: no instruction-set objects under $OBJ"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# weak functions (W) the instruction-set files define
nm --defined-only "${isa[@]}" 2>/dev/null | awk '$2 == "W" {print $3}' | sort -u >"$tmp/isa"
# every symbol the other objects define or call
printf '%s\n' "${rest[@]}" | xargs -r nm 2>/dev/null | awk 'NF >= 2 && ($(NF-1) == "W" || $(NF-1) == "U" || $(NF-1) == "T") {print $NF}' | sort -u >"$tmp/rest"
comm -12 "$tmp/isa" "$tmp/rest" >"$tmp/shared"
if [ -s "$tmp/shared" ]; then
  echo "check_isa_symbols: weak functions defined by instruction-set files and also used elsewhere in $BUILD:"
  while read -r sym; do
    files=$(for f in "${isa[@]}"; do nm --defined-only "$f" 2>/dev/null | awk -v s="$sym" '$2 == "W" && $3 == s {found = 1} END {exit !found}' && basename "$f" .cpp.o; done | tr '\n' ' ')
    echo "  $(echo "$sym" | c++filt)   [$files]"
  done < <(c++filt <"$tmp/shared" | paste - "$tmp/shared" | sort -u -k1,1 -t$'\t' | cut -f2)
  exit 1
fi
echo "check_isa_symbols: ${#isa[@]} instruction-set objects, no weak function shared with the other $((${#rest[@]})) objects"
