#!/usr/bin/env bash
# Enforces the dependency rule of docs/architecture.md: a folder may #include only the folders its row allows
# (transitively). Prints every violation and exits 1 when there is one.
set -euo pipefail
root=${1:-.}
cd "$root"
declare -A allow=(
  [support]="support npuc"
  [plugin]="plugin support npuc"
  [ir]="ir support npuc"
  [ops]="ops ir plugin kernels support npuc"
  [kernels]="kernels support npuc"
  [engine]="engine ops ir kernels plugin support npuc"
  [frontend]="frontend ops ir plugin support npuc"
  [passes]="passes engine ops ir kernels plugin support npuc"
  [driver]="driver frontend passes quant engine target prepost plan codegen package runtime ops ir kernels plugin support npuc"
  [target]="target ops ir plugin support npuc"
  [prepost]="prepost ops ir kernels plugin support npuc"
  [quant]="quant engine ops ir kernels plugin support npuc"
  [plan]="plan target ops ir plugin support npuc"
  [codegen]="codegen plan package target ops ir kernels plugin support npuc"
  [package]="package kernels plugin support npuc"
  [runtime]="runtime package kernels plugin support npuc"
  [capi]="capi runtime package kernels plugin support npuc"
  [tools]="npuc"
)
bad=0
while IFS= read -r f; do
  case "$f" in
    src/*) folder=$(echo "$f" | cut -d/ -f2) ;;
    tools/npuc/*) folder=tools ;;
    *) continue ;;
  esac
  allowed=${allow[$folder]:-}
  if [ -z "$allowed" ]; then echo "$f: folder '$folder' has no row in the dependency table"; bad=1; continue; fi
  while IFS= read -r inc; do
    top=${inc%%/*}
    [ "$top" = "$inc" ] && continue   # same-folder relative include
    if ! [[ " $allowed " == *" $top "* ]]; then
      echo "$f: includes \"$inc\", but $folder may only use: $allowed"
      bad=1
    fi
  done < <(grep -oE '^#include "[^"]+"' "$f" | sed -E 's/#include "([^"]+)"/\1/')
done < <(git ls-files 'src/*.cpp' 'src/*.hpp' 'tools/npuc/*.cpp' 'tools/npuc/*.hpp' 2>/dev/null || find src tools/npuc -name '*.[ch]pp')
exit $bad
