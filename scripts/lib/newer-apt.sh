# Sourced by scripts/fetch-kernel-headers.sh and scripts/fetch-kernel-image.sh: a private apt
# configuration for Debian's newer suites (sid, experimental, trixie-backports) that reuses the
# host's mirror and keeps its lists and cache under one directory, leaving the host's sources and
# packages untouched.
#
# newer_apt_setup DIR NAME ARCH: sets the array `opts` (apt-get/apt-cache options) and `mirror`, and
# refreshes the lists unless they are less than a day old. NAME prefixes the messages. Exits 2 when
# the archive cannot be reached and nothing is cached (apt-get update exits 0 even when every source
# failed, so success is judged by the lists it leaves).
newer_apt_setup() {
  local dir=$1 name=$2 arch=$3 out stamp
  mirror=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
             /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | awk '{print $2}' | head -n1 || true)
  mirror=${COREDUMPD_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs"
  printf 'deb %s %s main\n' "$mirror" sid "$mirror" experimental "$mirror" trixie-backports >"$dir/apt/sources.list"
  opts=(-o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" -o Acquire::Languages=none
        -o APT::Get::List-Cleanup=0 -o Acquire::Retries=2 -o Acquire::http::Timeout=20
        -o APT::Architecture="$arch")
  stamp="$dir/apt/updated"
  if [[ ! -f $stamp || -n $(find "$stamp" -mmin +1440) ]]; then
    out=$(apt-get "${opts[@]}" update -qq 2>&1) || true
    if ls "$dir"/apt/lists/*_Packages* >/dev/null 2>&1 && ! grep -qE '^(W|E): Failed to fetch' <<<"$out"; then
      touch "$stamp"
    else
      echo "$out" >&2
      if ! ls "$dir"/apt/lists/*_Packages* >/dev/null 2>&1; then
        echo "$name: cannot reach the Debian archive at $mirror (no network?) and nothing is cached" >&2
        exit 2
      fi
      echo "$name: archive unreachable, using the cached lists" >&2
    fi
  fi
}
