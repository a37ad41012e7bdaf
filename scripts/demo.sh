#!/usr/bin/env bash
# Run the profile2 demo (build/tools/profile2-demo) with the arguments given;
# it profiles a Java program on a real JVM. Build first with
# scripts/bootstrap.sh, or use scripts/quickstart.sh, which does both.
#
#   bash scripts/demo.sh [DEMO_ARGUMENT...]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
demo=$root/build/tools/profile2-demo

if [[ ! -x $demo ]]; then
  echo "demo.sh: $demo does not exist: run 'bash scripts/bootstrap.sh' first (if it is still missing, tools/ does not build the demo yet)" >&2
  exit 1
fi
exec "$demo" "$@"
