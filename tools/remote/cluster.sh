# Sourced by tools/remote_campaign.sh: the loopback stand-in for a remote-execution cluster.
#
#   PostgreSQL   a private cluster (initdb/pg_ctl as the postgres user), BuildGrid's scheduler state
#   BuildGrid    the REAPI server (Execution, CAS, ActionCache, Bots), from PyPI into a venv
#   workers      tools/remote/worker.py, one process per worker, each its own session
#
# Everything listens on 127.0.0.1 only, on free ports, and lives in $CLUSTER_DIR. Every process
# started here is recorded and stopped by cluster_stop, by its PID (or its session's ID).
#
#   cluster_prerequisites SECONDS   PostgreSQL and the venv, installed if missing; on failure
#                                   returns 1 with the reason in $CLUSTER_SKIP_REASON
#   cluster_start N                 needs $CLUSTER_DIR; sets $CLUSTER_EXECUTOR (grpc://127.0.0.1:PORT)
#   worker_start I / worker_kill I  worker-I; kill = SIGKILL of the worker and the action it runs
#   cluster_sql QUERY               a query on BuildGrid's database (the scheduler's jobs)
#   cluster_stop                    idempotent

CLUSTER_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AG_REMOTE_CACHE=${AG_REMOTE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ag-remote}
CLUSTER_VENV=$AG_REMOTE_CACHE/venv-buildgrid
CLUSTER_SESSIONS=()  # session IDs (= PIDs of setsid'd leaders) of the server and the workers
CLUSTER_PG_DATA=""
CLUSTER_SKIP_REASON=""

cluster_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

pg_bin() {  # the newest installed PostgreSQL's bin folder
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [[ -n "$d" && -x "$d/pg_ctl" ]] && echo "$d"
}

python_311() {  # a python3 >= 3.11 (BuildGrid 0.4.4 requires it)
  local py
  for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null &&
        "$py" -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

cluster_prerequisites() {
  local budget=$1 deadline=$((SECONDS + $1)) req_hash py
  mkdir -p "$AG_REMOTE_CACHE"
  if [[ -z "$(pg_bin)" ]]; then
    cluster_log "installing PostgreSQL (Debian's postgresql)"
    if ! timeout "$budget" "$CLUSTER_TOOLS/../setup.sh" --remote >"$AG_REMOTE_CACHE/setup.log" 2>&1 ||
        [[ -z "$(pg_bin)" ]]; then
      CLUSTER_SKIP_REASON="PostgreSQL is not installed and could not be installed within ${budget}s: $(tail -1 "$AG_REMOTE_CACHE/setup.log")"
      return 1
    fi
  fi
  if ! id postgres >/dev/null 2>&1; then
    CLUSTER_SKIP_REASON="PostgreSQL is installed but there is no postgres user to run it as"
    return 1
  fi
  req_hash=$(sha256sum "$CLUSTER_TOOLS/requirements.txt" | cut -c1-16)
  if [[ "$(cat "$CLUSTER_VENV/.requirements" 2>/dev/null)" != "$req_hash" ]]; then
    if ! py=$(python_311); then
      CLUSTER_SKIP_REASON="no Python >= 3.11 with venv for BuildGrid 0.4.4"
      return 1
    fi
    cluster_log "installing BuildGrid 0.4.4 into $CLUSTER_VENV (pip)"
    rm -rf "$CLUSTER_VENV"
    if ! "$py" -m venv "$CLUSTER_VENV" ||
        ! timeout $((deadline > SECONDS ? deadline - SECONDS : 1)) "$CLUSTER_VENV/bin/pip" install -q \
          --disable-pip-version-check --retries 1 --timeout 30 \
          -r "$CLUSTER_TOOLS/requirements.txt" >"$AG_REMOTE_CACHE/pip.log" 2>&1; then
      CLUSTER_SKIP_REASON="pip could not install BuildGrid within ${budget}s: $(tail -1 "$AG_REMOTE_CACHE/pip.log")"
      rm -rf "$CLUSTER_VENV"
      return 1
    fi
    echo "$req_hash" >"$CLUSTER_VENV/.requirements"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: polls COMMAND until it succeeds
  local limit=$1 what=$2
  shift 2
  local end=$((SECONDS + limit))
  until "$@" 2>/dev/null; do
    if ((SECONDS >= end)); then
      cluster_log "ERROR: $what did not come up within ${limit}s (logs: $CLUSTER_DIR)"
      return 1
    fi
    sleep 0.2
  done
}

# start_session LOG COMMAND...: runs COMMAND in a session of its own (setsid does not fork here: a
# script's background jobs lead no process group), so its PID is also its session's ID. Records
# it in CLUSTER_SESSIONS and LAST_SESSION.
start_session() {
  local log=$1
  shift
  setsid "$@" >"$log" 2>&1 </dev/null &
  LAST_SESSION=$!
  CLUSTER_SESSIONS+=("$LAST_SESSION")
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cluster_start() {
  local workers=$1 pg_port bgd_port db_url bin
  bin=$(pg_bin)
  mkdir -p "$CLUSTER_DIR"
  chmod 755 "$CLUSTER_DIR"  # the postgres user must reach its data folder
  CLUSTER_PG_DATA=$CLUSTER_DIR/pg
  mkdir -p "$CLUSTER_PG_DATA"
  chown postgres: "$CLUSTER_PG_DATA"
  runuser -u postgres -- test -w "$CLUSTER_PG_DATA" || {
    cluster_log "ERROR: the postgres user cannot write to $CLUSTER_PG_DATA (a parent folder closed to it?)"
    return 1
  }
  pg_port=$(free_port)
  runuser -u postgres -- "$bin/initdb" -D "$CLUSTER_PG_DATA/data" -U postgres --auth=trust \
    --no-sync -E UTF8 >"$CLUSTER_DIR/initdb.log" 2>&1 || {
    cluster_log "ERROR: initdb failed: $(tail -3 "$CLUSTER_DIR/initdb.log")"
    return 1
  }
  # Loopback TCP only (and a socket in our own folder); fsync off: the state is thrown away.
  runuser -u postgres -- "$bin/pg_ctl" -D "$CLUSTER_PG_DATA/data" -l "$CLUSTER_PG_DATA/log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories=$CLUSTER_PG_DATA -c fsync=off -c max_connections=400" \
    start >/dev/null || {
    cluster_log "ERROR: PostgreSQL did not start: $(tail -3 "$CLUSTER_PG_DATA/log")"
    return 1
  }
  "$bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres bgd
  CLUSTER_PG_PORT=$pg_port
  db_url="postgresql+psycopg2://postgres@127.0.0.1:$pg_port/bgd"
  "$CLUSTER_VENV/bin/bgd" migrate apply "$db_url" >"$CLUSTER_DIR/migrate.log" 2>&1 || {
    cluster_log "ERROR: bgd migrate apply failed: $(tail -3 "$CLUSTER_DIR/migrate.log")"
    return 1
  }
  cluster_log "PostgreSQL on 127.0.0.1:$pg_port"

  bgd_port=$(free_port)
  mkdir -p "$CLUSTER_DIR/cas"
  start_session "$CLUSTER_DIR/server.log" env BGD_ADDRESS="127.0.0.1:$bgd_port" BGD_DB_URL="$db_url" \
    BGD_CAS_DIR="$CLUSTER_DIR/cas" "$CLUSTER_VENV/bin/bgd" server start "$CLUSTER_TOOLS/buildgrid.yml"
  echo "$LAST_SESSION" >"$CLUSTER_DIR/server.pid"
  wait_for 60 "the BuildGrid server" port_open "$bgd_port" || return 1
  CLUSTER_EXECUTOR=grpc://127.0.0.1:$bgd_port
  cluster_log "BuildGrid 0.4.4 on 127.0.0.1:$bgd_port"

  local i
  for ((i = 0; i < workers; i++)); do worker_start "$i"; done
  for ((i = 0; i < workers; i++)); do
    wait_for 60 "worker-$i" grep -q "bot session" "$CLUSTER_DIR/worker-$i.log" || return 1
  done
  cluster_log "$workers worker(s) connected"
}

cluster_sql() {  # cluster_sql QUERY: runs QUERY on BuildGrid's database, prints rows space-separated
  "$(pg_bin)/psql" -h 127.0.0.1 -p "$CLUSTER_PG_PORT" -U postgres -d bgd -At -F ' ' -c "$1"
}

worker_start() {
  local i=$1
  start_session "$CLUSTER_DIR/worker-$i.log" "$CLUSTER_VENV/bin/python" -u "$CLUSTER_TOOLS/worker.py" \
    --server "$CLUSTER_EXECUTOR" --name "worker-$i" --work-dir "$CLUSTER_DIR/workers"
  echo "$LAST_SESSION" >"$CLUSTER_DIR/worker-$i.pid"
}

# Like a machine that dies: the worker and the command it runs go at once, with no goodbye.
worker_kill() {
  local sid
  sid=$(cat "$CLUSTER_DIR/worker-$1.pid")
  pkill -KILL -s "$sid"
}

stop_session() {  # SIGTERM, then SIGKILL whatever is left in the session
  local sid=$1 i
  kill -TERM "$sid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    pgrep -s "$sid" >/dev/null || return 0
    sleep 0.1
  done
  pkill -KILL -s "$sid" 2>/dev/null || true
}

cluster_stop() {
  local sid
  for sid in "${CLUSTER_SESSIONS[@]}"; do stop_session "$sid"; done
  CLUSTER_SESSIONS=()
  if [[ -n "$CLUSTER_PG_DATA" && -f "$CLUSTER_PG_DATA/data/postmaster.pid" ]]; then
    runuser -u postgres -- "$(pg_bin)/pg_ctl" -D "$CLUSTER_PG_DATA/data" -m fast -w -t 30 stop >/dev/null ||
      kill -KILL "$(head -1 "$CLUSTER_PG_DATA/data/postmaster.pid")" 2>/dev/null || true
  fi
  CLUSTER_PG_DATA=""
}
