#!/bin/sh
# Fails if one of the given shared objects needs a symbol of profile2 that
# seeds/001's API does not declare (every profile2_* name): the ASGST-only
# agents of issue 12 must call only ASGST_* functions.
status=0
for so in "$@"; do
  extra=$(nm -D --undefined-only "$so" | awk '{print $NF}' | grep '^profile2_' || true)
  if [ -n "$extra" ]; then
    echo "FAIL: $so calls $(echo $extra | tr '\n' ' ')"
    status=1
  else
    echo "ok: $so uses only ASGST_* ($(nm -D --undefined-only "$so" | grep -c ' ASGST_') functions)"
  fi
done
exit $status
