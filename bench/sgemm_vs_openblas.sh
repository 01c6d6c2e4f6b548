#!/usr/bin/env bash
# Times jtrain's SGEMM (dev.jtrain.tensor.kernel.MatmulBenchmark) and OpenBLAS sgemm (numpy.matmul through the
# peer script) in one run, alternating per thread count so both see the same machine state, and prints a
# side-by-side table with the ratio jtrain / OpenBLAS.
#
# usage: bench/sgemm_vs_openblas.sh [THREADS...]        (default: 1 2; sizes 1024 and 2048, square)
# needs: core compiled (./mvnw -pl core compile, run under the build lock when others are building);
#        JTRAIN_PEERS_DIR = a directory holding sgemm.py (prints "numpy.matmul n=N: X GFLOP/s median ...")
#        and env.sh (sets $PY and points numpy at OpenBLAS). Nothing in the project depends on it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
THREADS=("${@:-1 2}")
read -r -a THREADS <<< "${THREADS[*]}"
SIZES=(1024 2048)

PEERS="${JTRAIN_PEERS_DIR:-}"
if [ -z "$PEERS" ] || [ ! -f "$PEERS/sgemm.py" ] || [ ! -f "$PEERS/env.sh" ]; then
  cat >&2 <<MSG
sgemm_vs_openblas: peer scripts not found (JTRAIN_PEERS_DIR='${PEERS}').
  Set JTRAIN_PEERS_DIR to the directory holding sgemm.py and env.sh (the OpenBLAS/numpy peer), e.g.
  JTRAIN_PEERS_DIR=/path/to/peers bench/sgemm_vs_openblas.sh 1 2
MSG
  exit 2
fi

# JDK 25: $JAVA_HOME if it is one, else /usr/lib/jvm/*25* (a JDK 17 also has the vector incubator, so ask the version)
is25() { [ -x "$1" ] && [ "$("$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')" = 25 ]; }
JAVA="${JAVA_HOME:-/nonexistent}/bin/java"
if ! is25 "$JAVA"; then
  JAVA=""
  for cand in /usr/lib/jvm/*25*/bin/java; do is25 "$cand" && JAVA="$cand" && break; done
  [ -n "$JAVA" ] || { echo "sgemm_vs_openblas: no JDK 25 (looked at \$JAVA_HOME and /usr/lib/jvm/*25*)" >&2; exit 2; }
fi
CLASSES="$ROOT/core/target/classes"
if [ ! -f "$CLASSES/dev/jtrain/tensor/kernel/MatmulBenchmark.class" ]; then
  echo "sgemm_vs_openblas: $CLASSES has no MatmulBenchmark; build core first: ./mvnw -B -q -pl core compile" >&2
  exit 2
fi

# shellcheck disable=SC1091
source "$PEERS/env.sh"
PY="${PY:-python3}"

ERR=$(mktemp); trap 'rm -f "$ERR"' EXIT
declare -A JT OB
for t in "${THREADS[@]}"; do
  for n in "${SIZES[@]}"; do
    if ! res=$("$JAVA" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -cp "$CLASSES" \
           dev.jtrain.tensor.kernel.MatmulBenchmark --size "$n" --threads "$t" 2>"$ERR"); then
      echo "sgemm_vs_openblas: jtrain benchmark failed for n=$n threads=$t:" >&2; grep -v WARNING "$ERR" >&2; exit 1
    fi
    line=$(tail -n 1 <<< "$res")
    JT[$t,$n]=$(awk '{print $6}' <<< "$line") # the GFLOP/s column (m n k threads dtype GFLOP/s median_ms inputs)
  done
  out=$(OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t "$PY" "$PEERS/sgemm.py" "$t" numpy 2>/dev/null)
  blas=$(grep -o "blas_lib=.*" <<< "$out" | grep -o "libopenblas[^']*" | head -n1 || true)
  [ -n "$blas" ] || echo "sgemm_vs_openblas: warning: numpy did not load OpenBLAS with $t threads: $(head -n1 <<< "$out")" >&2
  for n in "${SIZES[@]}"; do
    OB[$t,$n]=$(grep "numpy.matmul *n=$n:" <<< "$out" | awk '{print $3}')
  done
done

printf "%6s %7s %14s %16s %8s\n" n threads "jtrain GFLOP/s" "OpenBLAS GFLOP/s" ratio
for t in "${THREADS[@]}"; do
  for n in "${SIZES[@]}"; do
    j=${JT[$t,$n]:-nan}; o=${OB[$t,$n]:-nan}
    printf "%6d %7d %14s %16s %8s\n" "$n" "$t" "$j" "$o" "$(awk -v j="$j" -v o="$o" 'BEGIN{ if (o+0 > 0 && j+0 > 0) printf "%.2f", j/o; else print "n/a" }')"
  done
done
