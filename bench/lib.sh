# Shared by the bench/*.sh scripts (sourced): the checks every study makes
# on the build it measures. The caller sets `name` (for messages) first.

fail() {
  echo "$name: $*" >&2
  exit 1
}

# bench_check_build BUILD: BUILD is a meson build dir, up to date, and not a
# sanitizer build (whose numbers would measure the sanitizer). Sets
# `buildtype` and `sanitize` for the caller's report.
bench_check_build() {
  local build=$1 opts
  [ -f "$build/build.ninja" ] || fail "no meson build in $build (meson setup $build)"
  ninja -C "$build" >/dev/null || fail "ninja -C $build failed"
  opts=$(meson introspect "$build" --buildoptions |
    python3 -c 'import json,sys; o={x["name"]: x["value"] for x in json.load(sys.stdin)}; print(o["buildtype"], o["sanitize"])')
  read -r buildtype sanitize <<<"$opts"
  [ "$sanitize" = none ] || fail "$build is a -Dsanitize=$sanitize build: its numbers would measure the sanitizer"
}

# bench_each_jdk COMMAND...: run COMMAND... with --java-home HOME --jdk NAME
# appended, once per JDK of $JDKS ("jdk17 jdk25" by default; homes $JDK17,
# $JDK25) whose java is there; the others are named as skipped.
bench_each_jdk() {
  local jdk home
  for jdk in ${JDKS:-jdk17 jdk25}; do
    home=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
    [ "$jdk" = jdk25 ] && home=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
    [ -x "$home/bin/java" ] || {
      echo "$name: no $home/bin/java, $jdk skipped" >&2
      continue
    }
    "$@" --java-home "$home" --jdk "$jdk"
  done
}
