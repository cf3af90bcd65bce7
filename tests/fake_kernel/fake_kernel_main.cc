// fake-kernel: runs one simulated crash (see fake_kernel.h) from command-line flags and prints the
// Result as JSON on stdout. For shell-driven tests and benchmarks, e.g.
//
//   fake-kernel --socket /run/coredumpd/kernel.sock --request-size 32 --size-ack 24 --mask 0x7f
//               --core-bytes $((256<<20)) --data-page-stride 4096 --expect-marker 0
//
// Numbers accept C prefixes (0x.. hex; a leading 0 means octal). Exit status: 0 when the session
// ran and every --expect-* held, 1 when an expectation failed, CLI11's codes for bad flags.
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tests/fake_kernel/fake_kernel.h"
#include "tests/fake_kernel/result_json.h"

namespace {

using coredumpd::fake_kernel::CoreSource;
using coredumpd::fake_kernel::Injection;
using coredumpd::fake_kernel::Options;
using coredumpd::fake_kernel::Point;
using coredumpd::fake_kernel::RecordFault;
using coredumpd::fake_kernel::Stall;

// Splits "a:b[:c]" into its parts.
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = s.find(sep, from);
    parts.push_back(s.substr(from, at - from));
    if (at == std::string::npos) return parts;
    from = at + 1;
  }
}

std::uint64_t parse_u64(const std::string& s, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || *end != '\0' || errno != 0) throw CLI::ValidationError(what, "not a number: " + s);
  return v;
}

Point parse_point_or_throw(const std::string& s, const std::string& what) {
  const auto p = coredumpd::fake_kernel::parse_point(s);
  if (!p) throw CLI::ValidationError(what, "unknown point '" + s + "'");
  return *p;
}

std::vector<std::byte> parse_hex(const std::string& s, const std::string& what) {
  if (s.size() % 2 != 0) throw CLI::ValidationError(what, "odd number of hex digits");
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    out.push_back(static_cast<std::byte>(parse_u64("0x" + s.substr(i, 2), what)));
  }
  return out;
}

RecordFault parse_fault(const std::string& spec) {
  const auto parts = split(spec, ':');
  if (parts.size() != 3) throw CLI::ValidationError("--record-fault", "want KIND:INDEX:VALUE");
  RecordFault f;
  if (parts[0] == "gap") f.kind = RecordFault::Kind::OffsetGap;
  else if (parts[0] == "type") f.kind = RecordFault::Kind::Type;
  else if (parts[0] == "flags") f.kind = RecordFault::Kind::Flags;
  else if (parts[0] == "header-size") f.kind = RecordFault::Kind::HeaderSize;
  else throw CLI::ValidationError("--record-fault", "kind must be gap, type, flags or header-size");
  f.at_record = parse_u64(parts[1], "--record-fault");
  f.value = parse_u64(parts[2], "--record-fault");
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Plays the kernel's side of the core_pattern @@ socket protocol once; prints JSON."};
  Options o;

  app.add_option("--socket", o.socket_path, "Server socket path (the part after @@)")->required();
  app.add_flag("--plain", o.plain_mode, "Plain @ mode: stream the core right after connect");
  app.add_flag("--plain-wait", o.plain_wait, "Plain @ mode with core_pipe_limit != 0: park after the stream");

  app.add_option("--request-size", o.request_size, "Request bytes sent: 16 (VER0), 32 (VER1), any")
      ->capture_default_str();
  std::optional<std::uint32_t> size_field;
  app.add_option("--size-field", size_field, "Lie in the request's size field");
  app.add_option("--size-ack", o.size_ack, "Largest ack accepted (req.size_ack)")->capture_default_str();
  app.add_option("--mask", o.mask, "Features offered (req.mask)")->capture_default_str();
  app.add_option("--memory-types", o.memory_types, "req.memory_types (task's coredump_filter)")
      ->capture_default_str();
  app.add_option("--memory-types-mask", o.memory_types_mask, "req.memory_types_mask")->capture_default_str();
  app.add_option("--close-files-bit", o.close_files_bit, "Value of COREDUMP_CLOSE_FILES (0: none)")
      ->capture_default_str();
  std::optional<std::size_t> split_at;
  std::uint64_t split_delay_ms = 0;
  app.add_option("--split-request-at", split_at, "Send the request in two pieces, split here");
  app.add_option("--split-delay-ms", split_delay_ms, "Pause between the request's pieces");

  std::string core_file;
  std::uint64_t core_bytes = 64 * 1024;
  std::uint64_t stride = 0;
  bool last_page = false;
  unsigned seed = 0;
  auto* file_opt = app.add_option("--core-file", core_file, "Stream this file as the core");
  app.add_option("--core-bytes", core_bytes, "Size of the generated pattern core")
      ->capture_default_str()
      ->excludes(file_opt);
  app.add_option("--data-page-stride", stride, "Pattern: only every K-th page holds data (0: all)")
      ->excludes(file_opt);
  app.add_flag("--data-last-page", last_page, "Pattern: the last page holds data too")->excludes(file_opt);
  app.add_option("--seed", seed, "Pattern seed (0..255)")->check(CLI::Range(0u, 255u))->excludes(file_opt);
  app.add_option("--chunk", o.chunk_size, "Bytes per send() of a plain stream")->capture_default_str();

  app.add_option("--page-size", o.records.page_size, "Records: sparse granularity")->capture_default_str();
  app.add_option("--max-record-data", o.records.max_data_len, "Records: largest DATA payload")
      ->capture_default_str();
  app.add_option("--record-header-size", o.records.header_size, "Records: header bytes sent (>= 32)")
      ->capture_default_str();
  bool omit_end = false;
  app.add_flag("--omit-end", omit_end, "Records: do not send END");
  std::vector<std::string> faults;
  app.add_option("--record-fault", faults, "Records fault KIND:INDEX:VALUE, KIND = gap|type|flags|header-size");

  std::optional<std::uint64_t> kill_after;
  app.add_option("--kill-after", kill_after, "Simulate SIGKILL after N stream bytes (close, no END)");
  std::vector<std::string> stalls;
  app.add_option("--stall", stalls, "Sleep POINT:MS (points: connected, request-sent, ack-read, "
                                    "marker-sent, stream-offset, stream-done, shutdown-sent, before-close)");
  std::vector<std::string> injections;
  app.add_option("--inject", injections, "Send bytes POINT:HEX (something a real kernel never does)");
  app.add_option("--stream-offset", o.hook_stream_offset, "Stream offset where 'stream-offset' fires");
  std::string close_cmd;
  app.add_option("--close-files-command", close_cmd,
                 "Shell command run where CLOSE_FILES closes the task's files (when acked)");

  std::int64_t timeout_ms = 10'000;
  app.add_option("--timeout-ms", timeout_ms, "Overall deadline (0: none, like the real kernel)")
      ->capture_default_str();
  std::optional<std::uint32_t> expect_marker;
  std::string expect_outcome;
  app.add_option("--expect-marker", expect_marker, "Exit 1 unless this marker was sent");
  app.add_option("--expect-outcome", expect_outcome, "Exit 1 unless the outcome has this name");
  bool pretty = false;
  app.add_flag("--pretty", pretty, "Indent the JSON");

  try {
    app.parse(argc, argv);
    o.size_field = size_field;
    o.request_split_at = split_at;
    o.request_split_delay = std::chrono::milliseconds(split_delay_ms);
    o.records.send_end = !omit_end;
    o.kill_after_bytes = kill_after;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    for (const auto& f : faults) o.records.faults.push_back(parse_fault(f));
    for (const auto& s : stalls) {
      const auto parts = split(s, ':');
      if (parts.size() != 2) throw CLI::ValidationError("--stall", "want POINT:MS");
      o.stalls.push_back(Stall{parse_point_or_throw(parts[0], "--stall"),
                               std::chrono::milliseconds(parse_u64(parts[1], "--stall"))});
    }
    for (const auto& s : injections) {
      const auto parts = split(s, ':');
      if (parts.size() != 2) throw CLI::ValidationError("--inject", "want POINT:HEX");
      o.injections.push_back(Injection{parse_point_or_throw(parts[0], "--inject"), parse_hex(parts[1], "--inject")});
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (!core_file.empty()) {
    std::string error;
    auto core = CoreSource::from_file(core_file, error);
    if (!core) {
      std::cerr << "fake-kernel: " << error << "\n";
      return 2;
    }
    o.core = std::move(*core);
  } else {
    o.core = CoreSource::pattern(core_bytes, stride, o.records.page_size, static_cast<std::uint8_t>(seed),
                                 last_page);
  }
  if (!close_cmd.empty()) {
    o.close_files = [&close_cmd] {
      if (std::system(close_cmd.c_str()) != 0) std::cerr << "fake-kernel: close-files command failed\n";
    };
  }

  const auto result = coredumpd::fake_kernel::run(o);
  auto json = coredumpd::fake_kernel::result_to_json(result);
  json["core"] = o.core.describe();
  std::cout << json.dump(pretty ? 2 : -1) << "\n";

  bool ok = true;
  if (expect_marker && result.marker != expect_marker) ok = false;
  if (!expect_outcome.empty() && coredumpd::fake_kernel::outcome_name(result.outcome) != expect_outcome) ok = false;
  return ok ? 0 : 1;
}
