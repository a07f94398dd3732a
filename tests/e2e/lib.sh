# The start and helpers of the end-to-end scripts, sourced by a script run as `SCRIPT NPUC SOURCE_DIR`: sets $npuc and
# $src from its arguments, $tmp (a scratch folder removed on exit) and fails=0; ok / bad count results,
# expect_error checks one refused command.
set -uo pipefail
npuc=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fails=$((fails + 1)); }

# expect_error STATUS TEXT -- command...: the command must exit with STATUS and print TEXT on stderr, in exactly one
# line that says "error".
expect_error() {
  local want=$1 text=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then bad "$* exited $rc, expected $want: $(head -c 400 "$tmp/err")"; return; fi
  if ! grep -qF -- "$text" "$tmp/err"; then bad "$*: stderr lacks '$text': $(head -c 400 "$tmp/err")"; return; fi
  if [ "$(grep -c 'error' "$tmp/err")" -ne 1 ]; then bad "$*: expected exactly one error line: $(cat "$tmp/err")"; return; fi
  ok "$(basename "$1") ${2:-} … -> $rc: $(head -c 160 "$tmp/err" | tr '\n' ' ')"
}
