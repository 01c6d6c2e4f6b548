# Sourced by the fault-tolerance benchmarks (ROOT and NAME set by the caller): checks the emulated-host harness, builds
# the jar if needed, brings up 2 emulated hosts (torn down on exit), makes the run directory OUT (KEEP=1 keeps it), and
# defines JT (the jtrain jar run as ./jtrain runs it) and steps_done RUN (step records in RUN/metrics.jsonl).
HOSTS=$ROOT/test/hosts/hosts.sh
# each emulated host on its own share of the CPUs, as separate machines (JT_HOST_CPUS=shared to compare)
export JT_HOST_CPUS=${JT_HOST_CPUS:-split}
"$HOSTS" check >/dev/null || { echo "$NAME: emulated hosts unavailable: $("$HOSTS" check)" >&2; exit 2; }
"$ROOT/jtrain" --version >/dev/null 2>&1 || true # builds the jar if needed
OUT=$(mktemp -d)
trap '"$HOSTS" down >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] && echo "logs kept in $OUT" || rm -rf "$OUT"' EXIT
"$HOSTS" up "${NHOSTS:-2}" >/dev/null 2>&1 # NHOSTS=3: a third host, e.g. for a spare
JAVA="$(ls -d /usr/lib/jvm/*25*/bin/java | head -1)"
JT=("$JAVA" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -jar "$ROOT/cli/target/jtrain-cli.jar")

steps_done() { if [ -f "$1/metrics.jsonl" ]; then grep -c '"type":"step"' "$1/metrics.jsonl" || true; else echo 0; fi; }
