# Helpers shared by the end-to-end CLI tests (sourced; the BUILD passes its path first).
TMP="${TEST_TMPDIR:-$(mktemp -d)}"

fail() { echo "FAIL: $*" >&2; exit 1; }

expect_error() {  # expect_error CODE SUBSTRING -- command...
  local code="$1" text="$2"
  shift 3
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  [[ "$rc" == "$code" ]] || fail "exit $rc (want $code) from: $* -- $out"
  grep -qF -- "$text" <<<"$out" || fail "no '$text' in: $out"
}
