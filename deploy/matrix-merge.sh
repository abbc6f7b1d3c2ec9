#!/bin/sh
# The merge step of a split matrix (see matrix-shard.sh): combines
# OUTDIR/shard-*-of-N.json into OUTDIR/matrix.txt (the table),
# OUTDIR/matrix.json and OUTDIR/matrix.xml (JUnit), prints the table, and
# exits as `kafkasim matrix` would have: 0 when every claim held and every
# twin was caught, 1 when not, 2 on bad input (a shard missing, say).
#
#   matrix-merge.sh OUTDIR
#
# KAFKASIM_SHARDS=N is the number of shards. With KAFKASIM_MERGE_WAIT=S
# it first waits up to S seconds for all N shards to land (a Kubernetes
# merge Job started beside the indexed Job); without, a missing shard is an
# error at once.
set -eu
out=${1:?usage: matrix-merge.sh OUTDIR}
n=${KAFKASIM_SHARDS:?set KAFKASIM_SHARDS to the number of shards}
wait=${KAFKASIM_MERGE_WAIT:-0}
ks=${KAFKASIM:-kafkasim}
files() {
  i=1
  while [ "$i" -le "$n" ]; do
    echo "$out/shard-$i-of-$n.json"
    i=$((i + 1))
  done
}
waited=0
while :; do
  missing=0
  for f in $(files); do [ -s "$f" ] || missing=$((missing + 1)); done
  [ "$missing" -eq 0 ] && break
  [ "$waited" -ge "$wait" ] && break
  echo "matrix-merge: $missing of $n shards not done yet"
  sleep 10
  waited=$((waited + 10))
done
if [ "$missing" -gt 0 ]; then
  for f in $(files); do
    [ -s "$f" ] || echo "matrix-merge: $f is missing: that shard has not finished" >&2
  done
  exit 2
fi
code=0
# shellcheck disable=SC2086
"$ks" merge --json $(files) > "$out/matrix.json" || code=$?
[ "$code" -le 1 ] || exit "$code"
code=0
# shellcheck disable=SC2086
"$ks" merge --junit "$out/matrix.xml" $(files) > "$out/matrix.txt" || code=$?
cat "$out/matrix.txt"
exit "$code"
