#!/usr/bin/env bash
# spark.sh - a throw-away Spark standalone cluster over the hosts emulated by hosts.sh.
#
#   Master on jt-node1:7077, one Worker per host jt-nodeK (2 cores each by default). Spark comes from the jars
#   a Maven build already has (no Spark download or install): `up` takes their class path and builds a minimal
#   SPARK_HOME (a RELEASE file and jars/ of symbolic links) under $JTRAIN_HOSTS_STATE/spark, which Workers need to
#   build executor command lines. Logs and work directories live there too; `spark.sh down` / `hosts.sh down`
#   remove everything.
#
# Drivers must run on one of the hosts (`hosts.sh exec 1 ...`): 10.231.0.0/24 exists only inside them.
#
# Usage: spark.sh up CLASSPATH [N] | down | home | logs
set -euo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
HOSTS=$HERE/hosts.sh
STATE=${JTRAIN_HOSTS_STATE:-/tmp/jtrain-hosts}
SD=$STATE/spark
CORES=${JT_SPARK_CORES:-2}
WAIT_S=${JT_SPARK_TIMEOUT:-90}

die() { echo "spark.sh: error: $*" >&2; exit 1; }
log() { [[ -n ${JT_QUIET:-} ]] || echo "spark.sh: $*" >&2; }

java_bin() {
  if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then echo "$JAVA_HOME/bin/java"; else command -v java; fi
}

up() {
  local cp=${1:?usage: spark.sh up CLASSPATH [N]} n=${2:-$("$HOSTS" n)}
  [[ $n -ge 1 ]] || die "no emulated hosts are up (hosts.sh up N first)"
  down_quiet
  mkdir -p "$SD/home/jars" "$SD/logs"
  echo "Spark (jars from a Maven class path) for jtrain's emulated hosts" > "$SD/home/RELEASE"
  local IFS=: jar
  for jar in $cp; do [[ $jar == *.jar && -f $jar ]] && ln -sf "$jar" "$SD/home/jars/"; done
  unset IFS
  ls "$SD/home/jars"/spark-core_*.jar >/dev/null 2>&1 || die "no spark-core jar in the class path given"
  local java; java=$(java_bin)
  # SPARK_SCALA_VERSION: Workers otherwise look for a source build to learn it when they build executor commands.
  export SPARK_HOME=$SD/home SPARK_LOG_DIR=$SD/logs SPARK_NO_DAEMONIZE=1 SPARK_SCALA_VERSION=2.13
  log "master on jt-node1:7077"
  "$HOSTS" exec 1 setsid "$java" -Xmx512m -cp "$SD/home/jars/*" org.apache.spark.deploy.master.Master \
    --host jt-node1 --port 7077 --webui-port 8080 9<&- >"$SD/logs/master.log" 2>&1 </dev/null &
  for ((k = 1; k <= n; k++)); do
    mkdir -p "$SD/work$k"
    log "worker on jt-node$k ($CORES cores)"
    "$HOSTS" exec "$k" setsid "$java" -Xmx512m -cp "$SD/home/jars/*" org.apache.spark.deploy.worker.Worker \
      --host "jt-node$k" --cores "$CORES" --memory 2g --work-dir "$SD/work$k" --webui-port 8081 spark://jt-node1:7077 \
      9<&- >"$SD/logs/worker$k.log" 2>&1 </dev/null &
  done
  local deadline=$((SECONDS + WAIT_S))
  while (( $(grep -c "Registering worker" "$SD/logs/master.log" 2>/dev/null || true) < n )); do
    (( SECONDS < deadline )) || { logs >&2; die "workers did not register with the master within ${WAIT_S}s"; }
    sleep 0.5
  done
  echo "$n" > "$SD/n"
  log "up: master spark://jt-node1:7077, $n worker(s)"
}

down_quiet() {
  pkill -f "org.apache.spark.deploy.(master.Master|worker.Worker|ExecutorBackend)|CoarseGrainedExecutorBackend" 2>/dev/null || true
  local i
  for i in $(seq 1 50); do
    pgrep -f "org.apache.spark.deploy.(master.Master|worker.Worker)|CoarseGrainedExecutorBackend" >/dev/null || break
    sleep 0.1
  done
  pkill -9 -f "org.apache.spark.deploy.(master.Master|worker.Worker)|CoarseGrainedExecutorBackend" 2>/dev/null || true
  rm -rf "$SD"
}

logs() {
  local f
  for f in "$SD"/logs/*.log $(find "$SD" -path '*/work*' -name stderr 2>/dev/null); do
    [[ -f $f ]] && { echo "== $f"; tail -n 40 "$f"; }
  done
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down_quiet ;;
  home) echo "$SD/home" ;;
  logs) logs ;;
  *) echo "usage: spark.sh up CLASSPATH [N] | down | home | logs" >&2; exit 2 ;;
esac
