// Writes a store of N realistic records for bench/list_bench.sh: each with an `extra` of about
// 10 KB shaped like the daemon's /proc capture (status, maps, limits, a container object), a mix
// of states, signals and executables over a day. Records only: no core files (COREFILE then reads
// "missing", which costs list the same stat() as a present one).
//
//   make-list-store STORE_DIR [N]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store/index.h"
#include "store/record_extras.h"

int main(int argc, char** argv) {
  using namespace coredumpd;
  if (argc < 2) {
    std::fprintf(stderr, "usage: make-list-store STORE_DIR [N]\n");
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 10'000;
  Index index(argv[1], /*writable=*/true);
  std::string maps;
  for (int i = 0; maps.size() < 7'000; ++i)
    maps += "7f3a" + std::to_string(100000 + i) + "000-7f3a" + std::to_string(100001 + i) +
            "000 r-xp 00000000 08:01 1234567 /usr/lib/x86_64-linux-gnu/libc.so.6\n";
  const std::string status(2'000, 's');
  const std::string limits(1'200, 'l');
  const std::int64_t start = 1'700'000'000'000'000;
  for (int i = 0; i < n; ++i) {
    DumpRecord r;
    char id[33];
    std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(start + i * 8'640'000LL),
                  static_cast<unsigned long long>(0x9e3779b97f4a7c15ULL * static_cast<unsigned>(i + 1)));
    r.id = id;
    r.state = i % 10 == 0 ? DumpState::MetadataOnly : DumpState::Complete;
    r.timestamp_us = start + i * 8'640'000LL;  // 10,000 over a day
    r.pid = 1000 + i;
    r.tid = r.pid;
    r.uid = r.euid = i % 4 == 0 ? 0 : 1000;
    r.gid = r.egid = r.uid;
    r.comm = "prog" + std::to_string(i % 37);
    r.exe = "/usr/local/bin/" + r.comm;
    r.argv = {r.exe, "--serve", "--port=" + std::to_string(8000 + i % 100)};
    r.cwd = "/srv";
    r.cgroup = "0::/system.slice/" + r.comm + ".service\n";
    r.hostname = "bench";
    r.boot_id = "0123456789abcdef0123456789abcdef";
    r.signal = i % 3 == 0 ? 6 : 11;
    r.core_size = r.stored_size = 4'096'000 + i;
    r.compression = "zstd";
    r.path = r.id + ".core.zst";
    r.extra = {{extras::kOwnerMayRead, true},
               {extras::kProc, {{"status", status}, {"maps", maps}, {"limits", limits}}},
               {extras::kContainer, {{"key", "systemd:" + r.comm + ".service"}, {"unit", r.comm + ".service"}}},
               {extras::kRlimitCore, 18446744073709551615ULL}};
    r.container_key = "systemd:" + r.comm + ".service";
    index.insert(r);
  }
  return 0;
}
