#!/bin/sh
# tpcds-s3.sh: TPC-DS on two flightd nodes in one run, one over a local
# directory and one over an s3:// warehouse on moto's S3 server (started
# here on loopback, as the tests start it), and the time ratio of the
# second to the first: first runs of each query after both nodes restarted
# (the S3 node's disk cache empty), then timed (warm) runs.
#
#   bench/tpcds-s3.sh                       # SF 0.1, 2 timed runs a query
#   SF=0.01 RUNS=1 MAX_AGE=0 bench/tpcds-s3.sh
#
# SF, RUNS, ONLY (query names, 03,07), MAX_AGE (the S3 node's
# -metadata-max-age; default flightd's), OUT (results directory),
# MOTO_SERVER (default the repository's .venv). Prints the S3 server's
# requests per query run.
set -eu
cd "$(dirname "$0")/.."
SF=${SF:-0.1}
RUNS=${RUNS:-2}
OUT=${OUT:-bench/results/s3}
MOTO_SERVER=${MOTO_SERVER:-.venv/bin/moto_server}
work=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# wait_for FILE PATTERN: prints the first match of the sed pattern in FILE.
wait_for() {
	for _ in $(seq 600); do
		m=$(sed -n "$2" "$1" | head -n 1)
		if [ -n "$m" ]; then echo "$m"; return; fi
		sleep 0.1
	done
	echo "tpcds-s3: nothing matching $2 in $1:" >&2
	cat "$1" >&2
	exit 1
}

go build -o "$work/flightd" ./cmd/flightd
(cd bench && go build -o "$work/tpcds" ./cmd/tpcds)

"$MOTO_SERVER" -H 127.0.0.1 -p 0 >"$work/moto.log" 2>&1 &
pids="$pids $!"
endpoint=$(wait_for "$work/moto.log" 's|.*Running on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p')
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_ENDPOINT_URL="$endpoint"
"$(dirname "$MOTO_SERVER")/python" -c "import boto3; boto3.client('s3').create_bucket(Bucket='bench')"

# start NAME DATA [FLAGS]: starts a node, sets NAME_uri.
start() {
	name=$1 data=$2
	shift 2
	"$work/flightd" -addr 127.0.0.1:0 -data "$data" "$@" >"$work/$name.log" 2>&1 &
	eval "${name}_pid=$!"
	pids="$pids $!"
	eval "${name}_uri=grpc://$(wait_for "$work/$name.log" 's|.*serving Flight SQL on grpc://\([^ ,]*\).*|\1|p')"
}
s3flags=""
if [ -n "${MAX_AGE:-}" ]; then s3flags="-metadata-max-age $MAX_AGE"; fi
start local "$work/local"
# shellcheck disable=SC2086
start s3 s3://bench/wh $s3flags
only=""
if [ -n "${ONLY:-}" ]; then only="-only $ONLY"; fi
# shellcheck disable=SC2086
"$work/tpcds" -sf "$SF" -flightd "$local_uri" -versus "$s3_uri" -load-only $only

# Both nodes again, so that first runs read nothing from memory (the
# S3 node starts with an empty disk cache; the local node's files stay
# in the OS page cache).
kill "$local_pid" "$s3_pid"
wait "$local_pid" "$s3_pid" || true
start local "$work/local"
# shellcheck disable=SC2086
start s3 s3://bench/wh $s3flags
before=$(grep -c 'HTTP/1.1"' "$work/moto.log" || true)
mkdir -p "$OUT"
# shellcheck disable=SC2086
"$work/tpcds" -sf "$SF" -flightd "$local_uri" -versus "$s3_uri" -skip-load -runs "$RUNS" -out "$OUT" \
	-flightd-flags "local vs s3 (moto) ${s3flags:-defaults}" $only
after=$(grep -c 'HTTP/1.1"' "$work/moto.log" || true)
queries=$(grep -c '"query"' "$OUT/versus.json")
echo "S3 requests: $((after - before)) over $queries queries x $((RUNS + 1)) runs: $(((after - before) / (queries * (RUNS + 1)))) a query run"
