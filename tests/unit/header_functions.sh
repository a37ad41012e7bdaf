#!/usr/bin/env bash
# What include/profile2.h declares, read from the header itself so that the
# header and export tests follow it without a hand-kept list.
#
#   header_functions.sh functions HEADER   every PROFILE2_API function, one a line
#   header_functions.sh errors HEADER      every enumerator of enum ASGST_Error
#                                          and enum PROFILE2_Error, one a line
#   header_functions.sh xmacro HEADER OUT  both lists as X-macros in a C header
#                                          (P2_HEADER_FUNCTIONS, P2_HEADER_ERRORS)
#
# The header's convention, which this relies on and checks: every exported
# function is declared on a line that starts with "PROFILE2_API" and carries
# the function's name before the first "(".
set -euo pipefail

die() {
  echo "header_functions.sh: $*" >&2
  exit 1
}

functions() {
  local header=$1
  # A PROFILE2_API line without "(" would hide its function from the tests.
  if grep -n '^PROFILE2_API' "$header" | grep -v '(' >&2; then
    die "$header: a PROFILE2_API declaration must name its function before '(' on the same line"
  fi
  local names
  names=$(sed -n '/^PROFILE2_API/{
      s/(.*//
      s/.*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*$/\1/p
    }' "$header")
  local want got
  want=$(grep -c '^PROFILE2_API' "$header" || true)
  got=$(printf '%s\n' "$names" | grep -c . || true)
  [[ $want == "$got" ]] || die "$header: parsed $got function names from $want PROFILE2_API lines"
  [[ $got -gt 0 ]] || die "$header: no PROFILE2_API function found"
  printf '%s\n' "$names"
}

errors() {
  local header=$1 names
  names=$(awk '
    /^enum (ASGST_Error|PROFILE2_Error)[[:space:]]*\{/ { inside = 1; next }
    inside && /^\};/ { inside = 0; next }
    inside && match($0, /^[[:space:]]*(ASGST|PROFILE2)_[A-Z0-9_]+[[:space:]]*=/) {
      name = substr($0, RSTART, RLENGTH - 1)
      gsub(/[[:space:]]/, "", name)
      print name
    }' "$header")
  [[ -n $names ]] || die "$header: no enumerator of enum ASGST_Error / PROFILE2_Error found"
  printf '%s\n' "$names"
}

xmacro() {
  local header=$1 out=$2 fns errs
  fns=$(functions "$header")
  errs=$(errors "$header")
  # The lists are C identifiers, one a line: word splitting is intended.
  # shellcheck disable=SC2086
  {
    echo "/* Generated from $(basename "$header") by tests/unit/header_functions.sh. */"
    echo "#define P2_HEADER_FUNCTIONS(X) \\"
    printf '  X(%s) \\\n' $fns
    echo
    echo "#define P2_HEADER_ERRORS(X) \\"
    printf '  X(%s) \\\n' $errs
    echo
  } >"$out.tmp"
  mv "$out.tmp" "$out"
}

[[ $# -ge 2 ]] || die "usage: header_functions.sh functions|errors HEADER | xmacro HEADER OUT"
case $1 in
  functions) functions "$2" ;;
  errors) errors "$2" ;;
  xmacro)
    [[ $# -eq 3 ]] || die "usage: header_functions.sh xmacro HEADER OUT"
    xmacro "$2" "$3"
    ;;
  *) die "unknown mode '$1' (functions, errors or xmacro)" ;;
esac
