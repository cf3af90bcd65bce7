// Shared by the dumpctl analysis tests: a temporary store with records, analyses stored with
// Index::set_analysis(), and dumpctl_main() run in-process.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <csignal>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/crash_report.h"
#include "cli/dumpctl.h"
#include "store/index.h"
#include "tests/unit/store_test_files.h"

namespace coredumpd::cli::unit_analysis {

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

class AnalysisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    std::string tmpl = (std::filesystem::temp_directory_path() / "dumpctl_analysis.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = root_ + "/store";
    std::filesystem::create_directory(store_);
    Index create(store_, true);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  /// Inserts record `n` (exe /usr/bin/prog<n>, SIGSEGV) with a zstd core "core<n>" when `core`.
  DumpRecord add(int n, std::int64_t ts, bool core = true, const std::string& exe = "") {
    DumpRecord r;
    r.id = coredumpd::unit::make_id(n);
    r.state = core ? DumpState::Complete : DumpState::MetadataOnly;
    r.timestamp_us = ts;
    r.pid = 100 + n;
    r.uid = r.euid = r.gid = r.egid = 1000;
    r.comm = "prog" + std::to_string(n);
    r.exe = exe.empty() ? "/usr/bin/prog" + std::to_string(n) : exe;
    r.argv = {r.exe};
    r.signal = SIGSEGV;
    r.crashing_tid_ns = 100 + n;
    if (core) {
      const std::string data = "core" + std::to_string(n);
      const std::string z = coredumpd::unit::zstd_compress(data);
      r.core_size = data.size();
      r.stored_size = z.size();
      r.compression = "zstd";
      r.path = r.id + ".zst";
      coredumpd::unit::write_file(store_ + "/" + r.path, z);
    }
    Index(store_, true).insert(r);
    return r;
  }
  void set_analysis(const DumpRecord& r, const analysis::CrashReport& report) {
    ASSERT_TRUE(Index(store_, true).set_analysis(r.id, analysis::to_json(report), report.signature, report.signature_text));
  }
  /// A report whose only content is its signature (grouping tests).
  static analysis::CrashReport signed_report(const std::string& hash, const std::string& text) {
    analysis::CrashReport rep;
    rep.state = "ok";
    rep.signature = hash;
    rep.signature_text = text;
    analysis::Thread t;
    t.tid = 1;
    t.crashed = true;
    rep.threads.push_back(t);
    rep.threads_total = 1;
    return rep;
  }

  Result run(std::vector<std::string> args) {
    std::ostringstream out, err;
    args.insert(args.begin(), {"dumpctl", "--store", store_});
    Result res;
    res.rc = dumpctl_main(args, Io{out, err, false});
    res.out = out.str();
    res.err = err.str();
    return res;
  }
  static std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }
  /// The lines of info's "Message" field, without the label or the value indentation.
  static std::vector<std::string> message_lines(const std::string& info) {
    // `info` aligns its labels in 14 columns as coredumpctl (value at column 16), `analyze` in 15.
    std::vector<std::string> got;
    std::size_t indent = 0;
    for (const auto& l : lines(info)) {
      const std::size_t at = l.find("Message: ");
      if (indent == 0 && at != std::string::npos && l.find_first_not_of(' ') == at) {
        indent = at + 9;
        got.push_back(l.substr(indent));
      } else if (indent != 0 && l.rfind(std::string(indent, ' '), 0) == 0) {
        got.push_back(l.substr(indent));
      } else if (indent != 0) {
        break;
      }
    }
    return got;
  }

  std::string root_, store_;
};

}  // namespace coredumpd::cli::unit_analysis
