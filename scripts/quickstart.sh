#!/usr/bin/env bash
# From a fresh Debian 12 machine to a profile: install what is missing, build
# build/, and run the demo on a real JVM. Arguments go to the demo.
#
#   bash scripts/quickstart.sh [DEMO_ARGUMENT...]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bash "$root/scripts/bootstrap.sh" build # packages, meson setup, ninja -C build
exec bash "$root/scripts/demo.sh" "$@"
