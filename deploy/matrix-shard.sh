#!/bin/sh
# One shard of a matrix split over machines: a CI job or a Kubernetes
# Indexed Job pod runs this, and matrix-merge.sh combines the shards into
# the matrix one run on the same seeds prints (kafkasim merge).
#
#   matrix-shard.sh OUTDIR [kafkasim matrix flags...]
#
# The shard comes from the environment: KAFKASIM_SHARDS=N and a 0-based
# index, KAFKASIM_SHARD_INDEX or else Kubernetes' JOB_COMPLETION_INDEX. The
# shard's JSON lands in OUTDIR/shard-I-of-N.json only once complete, so a
# pod killed midway leaves nothing half-written, and a rerun skips a shard
# already done (a Job restarted after some pods finished recomputes only
# the rest). KAFKASIM names the binary (default: kafkasim on PATH).
#
# Exit: 0 when the shard ran, whatever its rows say (a shard cannot judge a
# claim: a probe missing from its seeds may be reached on another's, and
# the merge gives the verdict); 2 on bad input, or the binary's failure.
set -eu
out=${1:?usage: matrix-shard.sh OUTDIR [kafkasim matrix flags...]}
shift
n=${KAFKASIM_SHARDS:?set KAFKASIM_SHARDS to the number of shards}
i=${KAFKASIM_SHARD_INDEX:-${JOB_COMPLETION_INDEX:?set KAFKASIM_SHARD_INDEX or JOB_COMPLETION_INDEX (0-based)}}
shard=$((i + 1))
file="$out/shard-$shard-of-$n.json"
mkdir -p "$out"
if [ -s "$file" ]; then
  echo "matrix-shard: $file exists: shard $shard/$n already done"
  exit 0
fi
code=0
"${KAFKASIM:-kafkasim}" matrix --shard "$shard/$n" --json "$@" > "$file.partial" || code=$?
if [ "$code" -gt 1 ]; then
  rm -f "$file.partial"
  echo "matrix-shard: shard $shard/$n: kafkasim matrix exited $code" >&2
  exit "$code"
fi
mv "$file.partial" "$file"
echo "matrix-shard: shard $shard/$n done: $file"
