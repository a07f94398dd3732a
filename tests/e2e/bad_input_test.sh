#!/usr/bin/env bash
# The findings of the bad-input campaign (issue 22), each as a check of the CLI: nothing the user owns is lost,
# nothing crashes (exit status 2 with one clear error, never 3 or a signal), nothing is silently wrong.
#   tests/e2e/bad_input_test.sh build/bin/npuc SOURCE_DIR
source "$(dirname "$0")/lib.sh"
digits=$src/models/digits/digits_cnn.onnx
d=$src/tests/data/bad

# ---- Data loss: PREFIX '..', '.', '' and foreign folders -------------------------------------------------------
mkdir -p "$tmp/home/work/sub" && echo precious >"$tmp/home/keep.txt" && echo precious >"$tmp/home/work/keep.txt"
(
  cd "$tmp/home/work/sub" || exit 1
  expect_error 2 "PREFIX '..' is not a name" -- "$npuc" translate .. -onnx "$digits" --target generic
  expect_error 2 "PREFIX '.' is not a name" -- "$npuc" translate . -onnx "$digits" --target generic
  expect_error 2 "PREFIX is empty" -- "$npuc" translate "" -onnx "$digits" --target generic
  expect_error 2 "Please add option name (-addr or -prepost or -onnx) before the file" -- "$npuc" translate ../x -onnx "$digits" --target generic
  expect_error 2 "PREFIX '..' is not a name" -- "$npuc" translate .. -onnx "$digits" --target generic --out "$tmp/home/work"
  expect_error 2 "PREFIX '.' is not a name" -- "$npuc" translate . -onnx "$digits" --target generic --out "$tmp/home/work"
  echo "fails=$fails" >"$tmp/sub_fails"
)
fails=$(($(sed 's/fails=//' "$tmp/sub_fails")))
[ -f "$tmp/home/keep.txt" ] && [ -f "$tmp/home/work/keep.txt" ] && [ -d "$tmp/home/work/sub" ] &&
  ok "the folders above the output are untouched" || bad "a refused PREFIX removed files"
out=$tmp/out_root
mkdir -p "$out/thesis" && echo chapter >"$out/thesis/chapter1.tex"
expect_error 2 "holds files npuc did not write" -- "$npuc" translate thesis -onnx "$digits" --target generic --out "$out"
[ "$(cat "$out/thesis/chapter1.tex")" = chapter ] && ok "a folder npuc did not write is kept" || bad "the foreign folder was replaced"
echo x >"$out/afile" && ln -s "$out/thesis" "$out/alink"
expect_error 2 "exists and is not a folder" -- "$npuc" translate afile -onnx "$digits" --target generic --out "$out"
expect_error 2 "is a symbolic link" -- "$npuc" translate alink -onnx "$digits" --target generic --out "$out"
expect_error 2 "exists and is not a folder" -- "$npuc" translate p -onnx "$digits" --target generic --out "$out/afile"
expect_error 2 "cannot create the folder" -- "$npuc" translate p -onnx "$digits" --target generic --out /proc/npuc_test
expect_error 2 "cannot create the folder" -- "$npuc" run "$digits" --input "input=$src/models/digits/test_x.npy" --output-dir /sys/npuc_test
expect_error 2 "exists and is not a folder" -- "$npuc" check "$digits" --target generic --out "$out/afile"
expect_error 2 "report prefix '../r' contains a path separator" -- "$npuc" check "$digits" --target generic --out "$out" --prefix ../r

# ---- Replacement: its own output is replaced; temporary folders of dead runs are removed; concurrent runs ----------
"$npuc" translate p -onnx "$digits" --target generic --out "$out" >/dev/null || bad "translate p"
mkdir -p "$out/.p.tmp-2147483000-0" && echo half >"$out/.p.tmp-2147483000-0/x"   # a run that died (no such pid)
"$npuc" translate p -onnx "$digits" --target drpai --out "$out" >/dev/null || bad "translate p again"
grep -q '"numerics": "fp16"' "$out/p/manifest.json" && ok "translate replaces its own earlier output" || bad "the output was not replaced"
[ -e "$out/.p.tmp-2147483000-0" ] && bad "a dead run's temporary folder was left" || ok "a dead run's temporary folder is removed"
pids=()
for i in $(seq 10); do "$npuc" translate c -onnx "$digits" --target generic --out "$out" >/dev/null 2>"$tmp/c$i.err" & pids+=($!); done
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
[ $rcs -eq 0 ] && ok "ten concurrent translates to one PREFIX all succeed" || bad "$rcs of 10 concurrent translates failed: $(cat "$tmp"/c*.err)"
"$npuc" simulate "$out/c" --input input="$src/models/digits/test_x.npy" -o "$tmp/csim" >/dev/null 2>&1
# (test_x holds 540 samples: the refusal says the shape; what matters is that the package itself reads.)
"$npuc" bench "$out/c" --runs 1 --warmup 0 >/dev/null && ok "the folder they leave is a complete package" || bad "concurrent translates left a broken package"
ls -a "$out" | grep -q '^\.c\.' && bad "concurrent translates left temporary folders: $(ls -a "$out")" || ok "no temporary folder left"
# A run killed at any moment leaves the old package or the new one, both complete.
for i in 1 2 3 4 5 6; do
  "$npuc" translate c -onnx "$digits" --target drpai --out "$out" >/dev/null 2>&1 &
  p=$!
  sleep "0.0$i"
  kill -9 "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  "$npuc" bench "$out/c" --runs 1 --warmup 0 >/dev/null 2>&1 || bad "after a kill at 0.0${i}s the package does not load"
done
ok "six killed runs: the package always loads"

# ---- Packages: the manifest is covered; deep nesting; oversized files ----------------------------------------------
"$npuc" translate m -onnx "$digits" --target generic --out "$out" >/dev/null
cp -r "$out/m" "$tmp/m_addr"
perl -0pi -e 's/("outputs": \[\s*\{[^}]*?"addr": )(\d+)/$1 . ($2 - 64)/se' "$tmp/m_addr/manifest.json"
cmp -s "$out/m/manifest.json" "$tmp/m_addr/manifest.json" && bad "the manifest edit did not apply"
expect_error 2 "does not match the files and the manifest" -- "$npuc" simulate "$tmp/m_addr" --input input="$tmp/x.bin" -o "$tmp/s1"
cp -r "$out/m" "$tmp/m_noout"
perl -0pi -e 's/"outputs": \[.*?\n \]/"outputs": []/s' "$tmp/m_noout/manifest.json"
expect_error 2 "does not match the files and the manifest" -- "$npuc" simulate "$tmp/m_noout" -o "$tmp/s2"
cp -r "$out/m" "$tmp/m_deep"
perl -e 'print "[" x 100000, "]" x 100000' >"$tmp/m_deep/manifest.json"
expect_error 2 "nesting deeper than 16 levels" -- "$npuc" simulate "$tmp/m_deep" -o "$tmp/s3"
cp -r "$out/m" "$tmp/m_big"
truncate -s 3G "$tmp/m_big/m_weight.dat"
expect_error 2 "the manifest declares" -- "$npuc" simulate "$tmp/m_big" -o "$tmp/s4"
rm -rf "$tmp/m_big"

# ---- Inputs: shapes, raw sizes, names, .npy headers -------------------------------------------------------------------
head -c 256 /dev/zero >"$tmp/x.bin"   # the generic package's input is 1x1x8x8 float32 = 256 bytes
head -c 4096 /dev/zero >"$tmp/x4k.bin"
expect_error 2 "needs exactly 256 bytes (float32 1x1x8x8), the file has 4096" -- "$npuc" simulate "$out/m" --input input="$tmp/x4k.bin" -o "$tmp/s5"
npy() {  # npy FILE HEADER_DICT DATA_BYTES: a v1.0 .npy file
  local h=$2 pad
  pad=$(( (64 - (10 + ${#h} + 1) % 64) % 64 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $(( (${#h} + pad + 1) & 255 )))\\x$(printf %02x $(( (${#h} + pad + 1) >> 8 )))"
    printf '%s' "$h"; printf "%${pad}s\n" ""; head -c "$3" /dev/zero; } >"$1"
}
npy "$tmp/flat.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (64,), }" 256
expect_error 2 "needs shape 1x1x8x8, got 64" -- "$npuc" simulate "$out/m" --input input="$tmp/flat.npy" -o "$tmp/s6"
npy "$tmp/fortran.npy" "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1, 8, 8), }" 256
expect_error 2 "Fortran-order" -- "$npuc" run "$digits" --input input="$tmp/fortran.npy" --output-dir "$tmp/r1"
npy "$tmp/huge.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': ($(printf '9%.0s' $(seq 99)),), }" 4
expect_error 2 "too large" -- "$npuc" run "$digits" --input input="$tmp/huge.npy" --output-dir "$tmp/r2"
npy "$tmp/nobrace.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 8, 8), " 256
expect_error 2 "malformed .npy header" -- "$npuc" run "$digits" --input input="$tmp/nobrace.npy" --output-dir "$tmp/r3"
npy "$tmp/ok.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 8, 8), }" 256
expect_error 2 "--input names 'x', which is not an input of the model (its inputs: input)" -- "$npuc" run "$digits" --input x="$tmp/ok.npy" --output-dir "$tmp/r4"
[ -e "$tmp/r1" ] || [ -e "$tmp/r4" ] && bad "a refused run wrote outputs" || ok "refused runs wrote nothing"

# ---- Models -------------------------------------------------------------------------------------------------------------
expect_error 2 "ai.onnx version -1 is not an opset version" -- "$npuc" inspect "$d/opset_minus1.onnx"
expect_error 2 "ir_version 99 is newer than npuc reads" -- "$npuc" inspect "$d/ir_version99.onnx"
expect_error 2 "two initializers are named 'c'" -- "$npuc" inspect "$d/duplicate_initializer.onnx"
mkdir -p "$tmp/ext" && cp "$d/external_link.onnx" "$tmp/ext/" && printf 'root:x:0:0' >"$tmp/secret" && ln -s "$tmp/secret" "$tmp/ext/w.bin"
expect_error 2 "outside the model's folder" -- "$npuc" inspect "$tmp/ext/external_link.onnx"
cf=$src/tests/data/control_flow  # malformed subgraphs (tests/data/control_flow/generate.py)
expect_error 2 "subgraphs nest deeper than 16 levels" -- "$npuc" inspect "$cf/bad_deep.onnx"
expect_error 2 "attribute 'else_branch': node '#0' (Identity) reads 'nowhere', which is not defined in its subgraph or any enclosing graph" -- "$npuc" inspect "$cf/bad_undefined.onnx"
expect_error 2 "lists of subgraphs (GRAPHS) are not supported" -- "$npuc" run "$cf/bad_graphs.onnx"
# A Loop whose body slices at the step number (a shape the data decides) has no package form: translate names the node.
loop11=/usr/share/libonnx-testdata/data/node/test_loop11/model.onnx
"$npuc" translate l11 -onnx "$loop11" --target generic --out "$out" >"$tmp/err" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "(Slice): output 0 has a dynamic shape" "$tmp/err" && [ ! -e "$out/l11/manifest.json" ] &&
  ok "a Loop body of data-dependent shapes: translate names the node, no package" || bad "translate of test_loop11: exit $rc, $(head -c 400 "$tmp/err")"

# A model that does not import still gets the error report (issue 23: translate failures of any kind write it).
expect_error 2 "unknown op 'FancyNewOp'" -- "$npuc" translate unk -onnx "$d/unknown_op.onnx" --out "$out"
grep -q "drpai.import" "$out/unk/unk_error_report.csv" 2>/dev/null && ok "an import failure writes the error report" || bad "no error report for an import failure"

# ---- Target files, address maps, pre/post ---------------------------------------------------------------------------
eng='name: t
engines: {m: {kind: mac, clock_mhz: 1, macs_per_cycle: 1}}
'
printf '%sgraph_rules: [{id: p, text: t, require: "%s1%s"}]\n' "$eng" "$(printf '(%.0s' $(seq 7000))" "$(printf ')%.0s' $(seq 7000))" >"$tmp/parens.yaml"
expect_error 2 "at most 4096" -- "$npuc" check "$digits" --target "$tmp/parens.yaml" --no-report
printf '%sgraph_rules: [{id: p, text: t, require: "%s1%s"}]\n' "$eng" "$(printf '(%.0s' $(seq 500))" "$(printf ')%.0s' $(seq 500))" >"$tmp/deep.yaml"
expect_error 2 "nesting deeper than 64 levels" -- "$npuc" check "$digits" --target "$tmp/deep.yaml" --no-report
printf 'name: t\nengines: {m: {kind: mac, clock_mhz: 1, macs_per_cycle: 0}}\n' >"$tmp/mpc.yaml"
expect_error 2 "'macs_per_cycle' must be positive" -- "$npuc" check "$digits" --target "$tmp/mpc.yaml" --no-report
printf '%saddress_bits: 64\n' "$eng" >"$tmp/bits.yaml"
expect_error 2 "'address_bits' must be an integer from 16 to 32" -- "$npuc" check "$digits" --target "$tmp/bits.yaml" --no-report
printf '%sdefault_engine: m\ngraph_rules: [{id: typo, text: t, require: "bacth == 1"}]\n' "$eng" >"$tmp/typo.yaml"
expect_error 2 "'bacth' is not a fact a node can have" -- "$npuc" check "$digits" --target "$tmp/typo.yaml" --no-report
printf 'name: t\nops: %s\n' "$(printf '[%.0s' $(seq 3000))" >"$tmp/nested.yaml"
expect_error 2 "nested too deeply" -- "$npuc" check "$digits" --target "$tmp/nested.yaml" --no-report
cat >"$tmp/am.yaml" <<'EOF'
- name: s1
  addr: 0xFFFF_F000
  lst_elemsp:
    - {name: data_in}
    - {name: data}
    - {name: data_out}
    - {name: work}
    - {name: weight}
    - {name: drp_config}
    - {name: drp_param}
    - {name: desc_aimac}
    - {name: desc_drp}
EOF
expect_error 2 "Please check $out/ov/ov_addrmap_intm.yaml" -- "$npuc" translate ov -onnx "$digits" -addr "$tmp/am.yaml" --out "$out"
grep -q "0x1_0000_" "$out/ov/ov_addrmap_intm.yaml" 2>/dev/null && ok "the intm file the overflow names is written" || bad "no $out/ov/ov_addrmap_intm.yaml"
sed 's/addr: 0xFFFF_F000/addr: 0x0/; s/{name: data}/{name: data, size: 0xFFFFFFFFFFFFFFFF}/' "$tmp/am.yaml" >"$tmp/am_wrap.yaml"
expect_error 2 "is beyond the 32-bit address space" -- "$npuc" translate ow -onnx "$digits" -addr "$tmp/am_wrap.yaml" --out "$out"
sed 's/cof_mul: \[.*\]/cof_mul: [1e30]/' "$src/tests/data/prepost/digits_prepost.yaml" >"$tmp/pp_inf.yaml"
grep -q "1e30" "$tmp/pp_inf.yaml" || bad "the pre/post edit did not apply"
expect_error 2 "cof_mul[0] = 1e+30 is outside the float16 range" -- "$npuc" translate pi -onnx "$digits" -prepost "$tmp/pp_inf.yaml" --out "$out"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all bad-input checks passed"
