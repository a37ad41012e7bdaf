#!/bin/sh
# Build the example sampler the way a customer would, against an installed
# profile2, and run it once:
#   1. meson install --destdir STAGE (library, profile2.h, profile2.pc);
#   2. cc -shared sampler.c $(pkg-config --cflags --libs profile2), strict C11,
#      warnings as errors, with the staged .pc file and nothing else;
#   3. java -agentpath:<that agent> Busy: the profile must name Busy.hot.
# Before that, the same compile against the build tree through meson's
# uninstalled file (BUILD_ROOT/meson-uninstalled/profile2-uninstalled.pc).
# The .pc file says prefix=/usr/local (or whatever -Dprefix was); a staged
# tree is read by overriding prefix, the usual pkg-config idiom for DESTDIR.
#
# usage: check_standalone.sh BUILD_ROOT SAMPLER_C JAVA CLASSPATH MESON
set -eu
build=$1 src=$2 java=$3 classpath=$4 meson=$5

# Under -Dsanitize=address the test environment preloads libasan for java;
# meson, pkg-config and cc must run without it. meson test also points
# LD_LIBRARY_PATH at the build tree, which would hide the staged library.
java_preload=${LD_PRELOAD:-}
unset LD_PRELOAD LD_LIBRARY_PATH

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
strict="-std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -shared -fPIC"

uninstalled_flags=$(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --cflags --libs profile2)
echo "uninstalled: pkg-config --cflags --libs profile2: $uninstalled_flags"
${CC:-cc} $strict -o "$stage/libexample-sampler-uninstalled.so" "$src" $uninstalled_flags ||
  { echo "FAIL: no build against meson-uninstalled/profile2-uninstalled.pc"; exit 1; }

"$meson" install -C "$build" --destdir "$stage/root" --no-rebuild --quiet
pc=$(find "$stage/root" -name profile2.pc)
[ -n "$pc" ] || { echo "FAIL: meson install staged no profile2.pc"; exit 1; }
echo "staged: $pc"
cat "$pc"

export PKG_CONFIG_PATH="$(dirname "$pc")"
prefix=$(pkg-config --variable=prefix profile2)
pc_flags=$(pkg-config --define-variable=prefix="$stage/root$prefix" --cflags --libs profile2)
libdir=$(pkg-config --define-variable=prefix="$stage/root$prefix" --variable=libdir profile2)
echo "pkg-config --cflags --libs profile2: $pc_flags"

# No -I/-L into the source or build tree: only what the .pc file says.
set -x
${CC:-cc} $strict -o "$stage/libexample-sampler.so" "$src" $pc_flags -Wl,-rpath,"$libdir"
set +x
# The agent must load the staged library, not the build tree's.
ldd "$stage/libexample-sampler.so" | grep -F "libprofile2.so.0 => $libdir/" ||
  { echo "FAIL: libprofile2 not resolved from $libdir:"; ldd "$stage/libexample-sampler.so"; exit 1; }

out="$stage/busy.collapsed"
LD_PRELOAD=$java_preload "$java" -agentpath:"$stage/libexample-sampler.so"=out="$out",interval=1000 \
  -cp "$classpath" Busy 1000
grep -q 'Busy\.hot [0-9]*$' "$out" || { echo "FAIL: no Busy.hot in the profile:"; cat "$out"; exit 1; }
echo "ok: the standalone build samples Busy.hot"
