#!/usr/bin/env bash
# Make a Debian 12 machine ready to build profile2, then configure and build.
#
#   bash scripts/bootstrap.sh [BUILD_DIR [MESON_OPTION...]]
#   bash scripts/bootstrap.sh                               # build/
#   bash scripts/bootstrap.sh build-asan -Dsanitize=address
#
# Installs only the Debian packages that are missing (apt-get needs root; sudo
# is used when available), configures BUILD_DIR with meson if it is not yet,
# applies MESON_OPTIONs, and builds it with ninja. Idempotent: a second run
# installs nothing and rebuilds only what changed. Quiet: prints nothing on
# success; on failure prints the failing step's output and, last, one line
# naming the step. With PROFILE2_TEST_PACKAGES=1 in the environment it
# also installs what only the tests use. Temurin 25 is not needed: the build
# uses it for the JVM tests only when it is present (meson option -Djdk25=).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

builddir=build
if (($# > 0)); then
  builddir=$1
  shift
fi

# What the build needs, as Debian 12 packages.
packages=(
  meson ninja-build pkg-config # build system
  gcc libc6-dev g++            # C; C++ only for the header test (tests/unit)
  binutils                     # nm, for the exported-symbol check
  libunwind-dev liburcu-dev libcriterion-dev zlib1g-dev
  openjdk-17-jdk-headless # jni.h/jvmti.h to build against; java/javac for the JVM tests
  python3
)
# What only the tests need (scripts/test.sh sets PROFILE2_TEST_PACKAGES=1).
if [[ ${PROFILE2_TEST_PACKAGES:-0} == 1 ]]; then
  packages+=(
    chromium                      # the flame graph page in headless Chromium (agent-html-chromium)
    libxalan2-java libxerces2-java # Xalan's XSLT processor, profiled end to end (tests/jvm/e2e)
    libh2-java                    # the H2 SQL engine, profiled end to end (tests/jvm/e2e)
    clojure                       # a JVM language's launcher script under profile2 run (tests/jvm/e2e)
    ant                           # a build tool under profile2 run (tests/jvm/e2e)
    jetty9                        # a servlet container under load, profiled by attach (tests/jvm/e2e;
                                  # the test runs its own; the package's service, where systemd starts
                                  # it, listens on port 8080: 'systemctl disable --now jetty9' stops it)
    clang libclang-rt-14-dev      # libFuzzer and its runtime (tests/fuzz, scripts/test_fuzz.sh)
    libc6-dbg gdb                 # libc's separate debug file, and gdb to check native names against
                                  # (agent-symbols-libc; without libc6-dbg its first half is skipped)
  )
fi

log=$(mktemp "${TMPDIR:-/tmp}/profile2-bootstrap.XXXXXX")
trap 'rm -f "$log"' EXIT

# step DESCRIPTION COMMAND...: run COMMAND with its output in the log; on
# failure show the output and stop with one line naming the step.
step() {
  local what=$1
  shift
  if ! "$@" >"$log" 2>&1 </dev/null; then
    tail -n 60 "$log" | sed 's/^/  | /' >&2
    echo "bootstrap.sh: FAILED at step '$what': $*" >&2
    exit 1
  fi
}

fail() {
  echo "bootstrap.sh: FAILED: $*" >&2
  exit 1
}

# --- 1. Debian packages ------------------------------------------------------
missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${packages[@]}"; do
    if [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) != installed ]]; then
      missing+=("$p")
    fi
  done
else
  # Not Debian: trust the tools that are there; meson names what is missing.
  for tool in meson ninja pkg-config cc c++ nm; do
    command -v "$tool" >/dev/null || fail "'$tool' not found and no dpkg here: install the equivalents of: ${packages[*]}"
  done
fi

if ((${#missing[@]} > 0)); then
  as_root=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null ||
      fail "packages missing (${missing[*]}) and not root: run as root or 'apt-get install ${missing[*]}'"
    as_root=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  step "update the package lists" "${as_root[@]}" apt-get update -qq
  # Slim Debian images drop /usr/share/man, and the JDK's postinst fails
  # registering its man pages with update-alternatives without it.
  step "create /usr/share/man/man1 for the JDK" "${as_root[@]}" mkdir -p /usr/share/man/man1
  step "install ${missing[*]}" "${as_root[@]}" \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- 2. configure --------------------------------------------------------------
if [[ -f $builddir/meson-private/coredata.dat ]]; then
  if (($# > 0)); then
    step "configure $builddir" meson configure "$builddir" "$@"
  fi
else
  step "configure $builddir" meson setup "$builddir" "$@"
fi

# --- 3. build ------------------------------------------------------------------
step "build $builddir" ninja -C "$builddir"
