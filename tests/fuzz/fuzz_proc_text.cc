// libFuzzer target: the parsers of /proc text read from the crashing process during the handshake
// (daemon/proc/collect.h), and the byte-string <-> JSON encoding every such string goes through before
// it is stored (store/dump_record.h). /proc files are kernel-formatted, but the crashing
// process chooses much of their content (comm, argv, environ, file names in maps and fd links,
// cgroup names), so they are untrusted.
//
// Input: raw bytes, given to every parser as the file's text.
//   - split_cmdline: joining the arguments with NULs gives back the input minus one trailing NUL;
//   - parse_nspid / parse_rlimit_core / locks_of_pid / estimate_core_bytes: never crash or throw;
//   - bytes_to_json: dump() never throws (nlohmann throws on invalid UTF-8, so is_valid_utf8 must
//     agree with nlohmann's own validation) and bytes_from_json(parse(dump)) gives back the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/proc/collect.h"
#include "store/dump_record.h"
#include "tests/fuzz/fuzz_util.h"
#include "util/text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // cmdline / environ
    const auto argv = coredumpd::split_cmdline(text);
    std::string joined;
    for (std::size_t i = 0; i < argv.size(); ++i) {
      if (i) joined.push_back('\0');
      joined += argv[i];
    }
    std::string expect = text;
    if (!expect.empty() && expect.back() == '\0') expect.pop_back();
    FUZZ_CHECK(joined == expect);
    FUZZ_CHECK(text.empty() == argv.empty());

    // status, limits, /proc/locks, maps
    if (const auto ids = coredumpd::parse_nspid(text)) FUZZ_CHECK(text.find("\nNSpid:") != std::string::npos);
    if (coredumpd::parse_rlimit_core(text)) FUZZ_CHECK(text.find("Max core file size") != std::string::npos);
    for (const auto& line : coredumpd::locks_of_pid(text, 1234)) FUZZ_CHECK(line.find("1234") != std::string::npos);
    (void)coredumpd::estimate_core_bytes(text);

    // The JSON form of a byte string, as stored and as dumpctl prints it.
    const bool utf8 = coredumpd::is_valid_utf8(text);
    const nlohmann::json j = coredumpd::bytes_to_json(text);
    FUZZ_CHECK(j.is_string() == utf8);
    const std::string dumped = j.dump();  // throws type_error 316 on invalid UTF-8
    const auto back = coredumpd::bytes_from_json(nlohmann::json::parse(dumped));
    FUZZ_CHECK(back.has_value() && *back == text);
    // Differential: nlohmann's strict validation accepts exactly what is_valid_utf8 accepts.
    bool nlohmann_ok = true;
    try {
      (void)nlohmann::json(text).dump();
    } catch (const nlohmann::json::type_error&) {
      nlohmann_ok = false;
    }
    FUZZ_CHECK(nlohmann_ok == utf8);
  } catch (...) {
    __builtin_trap();
  }
  return 0;
}
