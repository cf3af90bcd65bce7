#!/bin/bash
# `dumpctl list` over a store of N realistic records (default 10,000; ~10 KB of /proc capture
# each): wall time and peak RSS of `list`, `list -S`, `list -n 10` and `list --json` for one or
# more dumpctl binaries (e.g. main's build and a branch's) on the same store.
#
#   bash bench/list_bench.sh [--records N] [--runs R] [--build DIR] DUMPCTL...
#
# DIR/bench/make-list-store (default build/dev) writes the store under /var/tmp. Each command
# runs R times (default 3) per binary, interleaved; one line per run: binary, command, wall
# seconds, max RSS in MB (GNU time's %e and %M). No root needed.
set -euo pipefail
records=10000
runs=3
build=build/dev
while [[ $# -gt 0 ]]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { echo "usage: $0 [--records N] [--runs R] [--build DIR] DUMPCTL..." >&2; exit 2; }

work=$(mktemp -d /var/tmp/list-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/bench/make-list-store" "$work" "$records"
echo "store: $records records, index $(du -k "$work/index.sqlite" | cut -f1) KiB"
# The store's first record is at 1700000000 (2023-11-14 22:13:20 UTC), one every 8.64 s: -S takes
# the last tenth of them.
since="@$((1700000000 + records * 864 / 100 * 9 / 10))"
printf '%-40s %-16s %8s %8s\n' binary command wall_s rss_mb
for ((run = 0; run < runs; run++)); do
  for cmd in "list" "list -S $since" "list -n 10" "list --json"; do
    for dumpctl in "$@"; do
      read -r -a args <<< "$cmd"
      # -n and --json=VALUE are global options (dumpctl --help), as in coredumpctl.
      help=$("$dumpctl" --help 2>&1 || true)
      if [[ ${args[1]:-} == "-n" ]] && ! grep -qE -- '^ +-n ' <<< "$help"; then
        printf '%-40s %-16s %8s %8s\n' "$dumpctl" "$cmd" "n/a" "n/a"  # a build without -n (issue 24)
        continue
      fi
      # coredumpctl's --json=short where the build has it, else the old --json (pretty).
      [[ ${args[1]:-} == "--json" ]] && grep -q 'short' <<< "$help" && args[1]=--json=short
      /usr/bin/time -f '%e %M' -o "$work/time" "$dumpctl" --store "$work" "${args[@]}" > /dev/null 2>"$work/err" || {
        grep -q "No coredumps" "$work/err" || { cat "$work/err" >&2; exit 1; }
      }
      read -r wall rss < "$work/time"
      printf '%-40s %-16s %8s %8.1f\n' "$dumpctl" "${cmd%% @*}" "$wall" "$(echo "$rss / 1024" | bc -l)"
    done
  done
done
