#!/usr/bin/env bash
# The dynamic symbols libprofile2.so exports are exactly part of its API:
#   - every exported symbol starts with ASGST_ or profile2_,
#   - every exported symbol is a function declared in profile2.h,
#   - the core functions (ASGST_Capabilities, profile2_init, profile2_strerror,
#     profile2_unsupported_reason) are exported.
# Functions declared but not defined yet are listed, not failed: the API is
# being filled in.
#
#   check_exports.sh HEADER LIBRARY          check the library (nm -D --defined-only)
#   check_exports.sh HEADER --nm-output FILE check a saved `nm -D --defined-only`
#                                            listing (the tests of this script)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage="usage: check_exports.sh HEADER LIBRARY | HEADER --nm-output FILE"
[[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }
header=$1
if [[ $2 == --nm-output ]]; then
  [[ $# -eq 3 ]] || { echo "$usage" >&2; exit 2; }
  listing=$(cat "$3")
  what=$3
else
  listing=$(nm -D --defined-only "$2")
  what=$2
fi

declared=$(bash "$here/header_functions.sh" functions "$header" | sort -u)
# nm lines are "address type name"; a versioned name carries "@VERSION".
exported=$(printf '%s\n' "$listing" | awk 'NF >= 2 { sub(/@.*/, "", $NF); print $NF }' | sort -u)

status=0
fail() {
  echo "check_exports: FAIL: $*"
  status=1
}

for sym in $exported; do
  case $sym in
    ASGST_* | profile2_*) ;;
    *) fail "$what exports '$sym', which has neither the ASGST_ nor the profile2_ prefix" ;;
  esac
  if ! grep -qxF "$sym" <<<"$declared"; then
    fail "$what exports '$sym', which profile2.h does not declare"
  fi
done

for core in ASGST_Capabilities profile2_init profile2_strerror profile2_unsupported_reason; do
  grep -qxF "$core" <<<"$exported" || fail "$what does not export core function '$core'"
done

n_exported=$(grep -c . <<<"$exported" || true)
n_declared=$(grep -c . <<<"$declared")
missing=$(comm -23 <(printf '%s\n' "$declared") <(printf '%s\n' "$exported"))
echo "check_exports: $what exports $n_exported symbols; profile2.h declares $n_declared functions"
if [[ -n $missing ]]; then
  echo "check_exports: declared, not defined yet: $(tr '\n' ' ' <<<"$missing")"
fi
exit $status
