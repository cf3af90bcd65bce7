// The crash record the journal-entry tests start from: one process of user 1000 that died of
// SIGSEGV with its core stored as zstd. record_field_test and journal_fields_test add to it what
// each needs (a state, a container, /proc captures, an analysis).
#pragma once

#include <cstdint>

#include "store/dump_record.h"
#include "store/record_extras.h"

namespace coredumpd::test {

/// PID 4242 "prog1" (/usr/bin/prog1 --flag 'two words'), uid 1000, gid 1001, cwd /srv, host
/// "box", signal 11 at 1764900000123456 µs, state Complete, core "<id>.zst", rule "services",
/// RLIMIT_CORE unlimited (2^64-1, as the kernel reports it).
inline DumpRecord crash_record() {
  DumpRecord r;
  r.id = "00112233445566778899aabbccddeeff";
  r.state = DumpState::Complete;
  r.timestamp_us = 1764900000123456;
  r.pid = 4242;
  r.uid = 1000;
  r.gid = 1001;
  r.comm = "prog1";
  r.exe = "/usr/bin/prog1";
  r.argv = {"/usr/bin/prog1", "--flag", "two words"};
  r.cwd = "/srv";
  r.hostname = "box";
  r.signal = 11;
  r.compression = "zstd";
  r.path = r.id + ".zst";
  r.rule = "services";
  r.extra[extras::kRlimitCore] = std::uint64_t{18446744073709551615u};
  return r;
}

}  // namespace coredumpd::test
