// libFuzzer target: report_from_json() (analysis/crash_report.h), which reads the report an
// analyzer printed after parsing an attacker's core: the daemon must treat it as untrusted.
//
// Input: JSON text (what the analyzer wrote on its stdout).
// Invariants: only ReportError escapes; an accepted report round-trips through to_json() and text
// unchanged; fit_report() to a small cap keeps the crashing thread and stays under the cap (or
// drops everything it can); make_signature() of the crashing thread gives 32 hex characters.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/crash_report.h"
#include "analysis/signature.h"
#include "tests/fuzz/fuzz_util.h"

namespace ca = coredumpd::analysis;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  ca::CrashReport r;
  try {
    r = ca::report_from_json(j);
  } catch (const ca::ReportError&) {
    return 0;
  }
  const nlohmann::json once = ca::to_json(r);
  const std::string text = once.dump();  // throws (and so fails) on invalid UTF-8
  FUZZ_CHECK(ca::to_json(ca::report_from_json(nlohmann::json::parse(text))) == once);

  if (!r.threads.empty()) {
    if (const auto sig = ca::make_signature(r.threads[0], 11)) {
      FUZZ_CHECK(sig->hash.size() == 32);
      FUZZ_CHECK(sig->text.starts_with("SIGSEGV:"));
    }
  }

  const bool crashed = !r.threads.empty() && r.threads[0].crashed;
  const std::int64_t tid = crashed ? r.threads[0].tid : 0;
  const std::size_t cap = 2048;
  const std::size_t after = ca::fit_report(r, cap);
  FUZZ_CHECK(after == ca::to_json(r).dump().size());
  if (crashed) {
    FUZZ_CHECK(!r.threads.empty() && r.threads[0].crashed && r.threads[0].tid == tid);
  }
  if (after > cap) {  // only when nothing else could go
    FUZZ_CHECK(r.threads.size() <= 1 && r.modules.empty() && r.warnings.empty());
    FUZZ_CHECK(r.threads.empty() || r.threads[0].frames.empty());
  }
  return 0;
}
