// dumpctl end to end through dumpctl_main(): a temporary store with real .zst files, then the
// commands, checking output shape, byte-exact cores and error behaviour. Also the text helpers.
#include "cli/dumpctl.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/core_file.h"
#include "cli/info_details.h"
#include "cli/format.h"
#include "cli/short_id.h"
#include "daemon/policy/container.h"
#include "store/index.h"
#include "tests/unit/store_test_files.h"

extern char** environ;

namespace coredumpd::cli {
namespace {

using namespace std::string_literals;
namespace fs = std::filesystem;

using unit::make_id;
using unit::read_file;
using unit::write_file;
using unit::zstd_compress;

/// Bytes that compress somewhat but not trivially, like a core: random runs and zero pages.
std::string pseudo_core(std::size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; i += 4096) {
    if ((rng() & 3U) == 0U) continue;  // a zero page
    for (std::size_t j = i; j < std::min(size, i + 4096); ++j) {
      s[j] = static_cast<char>(rng() & 0x3FU);
    }
  }
  return s;
}

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

/// Runs a program with arguments (no shell involved) and captures its standard output.
std::string run_capture(const std::vector<std::string>& argv) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << argv[0];
  return out;
}

/// What `sh -c 'printf "%s\0" <words>'` prints, split at NUL: the words as the shell parsed them.
std::vector<std::string> shell_parse(const std::string& shell, const std::string& words) {
  const std::string out = run_capture({shell, "-c", "printf '%s\\0' " + words});
  std::vector<std::string> args;
  std::size_t start = 0;
  while (start < out.size()) {
    const std::size_t nul = out.find('\0', start);
    args.push_back(out.substr(start, nul - start));
    start = nul + 1;
  }
  return args;
}

class DumpctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    std::string tmpl = (fs::temp_directory_path() / "dumpctl_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = root_ + "/store";
    out_dir_ = root_ + "/out";
    tmp_dir_ = root_ + "/tmp";
    fs::create_directory(store_);
    fs::create_directory(out_dir_);
    fs::create_directory(tmp_dir_);
    ::setenv("TMPDIR", tmp_dir_.c_str(), 1);
    Index create(store_, true);
  }
  void TearDown() override {
    ::unsetenv("TMPDIR");
    fs::remove_all(root_);
  }

  /// A record with sensible defaults and no core (not inserted).
  static DumpRecord record(int n, std::int64_t ts, DumpState state) {
    DumpRecord r;
    r.id = make_id(n);
    r.state = state;
    r.timestamp_us = ts;
    r.pid = 100 + n;
    r.uid = r.euid = 1000;
    r.gid = r.egid = 1000;
    r.comm = "prog" + std::to_string(n);
    r.exe = "/usr/bin/prog" + std::to_string(n);
    r.argv = {r.exe};
    r.signal = SIGSEGV;
    r.boot_id = "bootid";
    return r;
  }

  /// A record with sensible defaults; `core` (if any) is compressed into <store>/<id>.zst.
  DumpRecord add(int n, std::int64_t ts, const std::optional<std::string>& core,
                 DumpState state = DumpState::Complete, std::size_t frame_size = SIZE_MAX) {
    DumpRecord r = record(n, ts, state);
    if (core) {
      const std::string z = zstd_compress(*core, frame_size);
      r.core_size = core->size();
      r.stored_size = z.size();
      r.compression = "zstd";
      r.path = r.id + ".zst";
      write_file(store_ + "/" + r.path, z);
    }
    insert(r);
    return r;
  }
  /// A record whose core is stored uncompressed in <store>/<id>.core (compression "none"): `head`,
  /// then `hole` zero bytes left sparse, then `tail`. Returns the core's bytes.
  std::string add_raw(int n, std::int64_t ts, const std::string& head, std::size_t hole = 0,
                      const std::string& tail = "", DumpState state = DumpState::Complete) {
    DumpRecord r = record(n, ts, state);
    std::string core = unit::store_raw_core(store_, r, head, hole, tail);
    insert(r);
    return core;
  }
  void insert(const DumpRecord& r) {
    Index idx(store_, true);
    idx.insert(r);
  }

  Result run(std::vector<std::string> args, bool tty = false) {
    std::ostringstream out, err;
    args.insert(args.begin(), {"dumpctl", "--store", store_});
    const Io io{out, err, tty};
    Result res;
    res.rc = dumpctl_main(args, io);
    res.out = out.str();
    res.err = err.str();
    return res;
  }

  std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }

  std::string root_, store_, out_dir_, tmp_dir_;
};

// ---- list -----------------------------------------------------------------------------------

TEST_F(DumpctlTest, ListHasOneLinePerDumpEvenWithHostileNames) {
  add(1, 1'000'000, "core1");
  DumpRecord r = add(2, 2'000'000, "core2");
  r = {};
  r.id = make_id(3);
  r.state = DumpState::Failed;
  r.timestamp_us = 3'000'000;
  r.pid = 7;
  r.comm = "x\ny\rz";
  r.exe = "/tmp/evil\n\x1b[31mred\xff\xfe\x07\xc2\x9b\xe2\x80\xae";
  insert(r);
  r.id = make_id(4);
  r.timestamp_us = 4'000'000;
  r.exe = "";  // unknown exe: the comm is shown instead
  insert(r);

  const Result res = run({"list"});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto ls = lines(res.out);
  ASSERT_EQ(ls.size(), 5U) << res.out;
  EXPECT_EQ(ls[0].rfind("TIME", 0), 0U);
  for (const char c : res.out) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f)) << "raw control byte " << int(u);
  }
  EXPECT_NE(ls[3].find("/tmp/evil\\n\\x1b[31mred\\xff\\xfe\\x07\\u009b\\u202e"), std::string::npos)
      << ls[3];
  EXPECT_NE(ls[3].find("failed"), std::string::npos);
  EXPECT_NE(ls[4].find("[x\\ny\\rz]"), std::string::npos) << ls[4];
  EXPECT_NE(ls[1].find("Thu 1970-01-01 00:00:01 UTC"), std::string::npos) << ls[1];
  EXPECT_NE(ls[1].find("SIGSEGV"), std::string::npos);
  EXPECT_NE(ls[1].find("present"), std::string::npos);
  EXPECT_NE(ls[1].find("/usr/bin/prog1"), std::string::npos);
  // Aligned: every data line is at least as long as the header's SIZE column start.
  const std::size_t exe_col = ls[0].find("EXE");
  EXPECT_EQ(ls[1].find("/usr/bin/prog1"), exe_col);
  EXPECT_EQ(ls[2].find("/usr/bin/prog2"), exe_col);
}

TEST_F(DumpctlTest, ListCorefileColumn) {
  const DumpRecord p = add(1, 1, "aaa");  // present
  DumpRecord m = add(2, 2, "bbb");        // missing: file deleted
  fs::remove(store_ + "/" + m.path);
  add(3, 3, "ccc", DumpState::Truncated);            // truncated
  add(4, 4, std::nullopt, DumpState::Failed);        // failed
  add(5, 5, std::nullopt, DumpState::MetadataOnly);  // none
  add(6, 6, std::nullopt, DumpState::InProgress);    // in progress
  add(7, 7, std::nullopt, DumpState::Interrupted);   // interrupted
  DumpRecord v = add(8, 8, "ddd");                   // vacuumed: retention deleted the file
  fs::remove(store_ + "/" + v.path);
  v.extra["vacuumed"] = {{"reason", "max_use"}, {"time_us", 9}, {"path", v.path}, {"stored_size", v.stored_size}};
  v.path.clear();
  Index(store_, true).update(v);
  const Result res = run({"list"});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto ls = lines(res.out);
  ASSERT_EQ(ls.size(), 9U);
  const char* expected[] = {"present", "missing",     "truncated",   "failed",
                            "none",    "in progress", "interrupted", "vacuumed"};
  const std::size_t col = ls[0].find("COREFILE");
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(ls[i + 1].compare(col, std::strlen(expected[i]), expected[i]), 0) << ls[i + 1];
  }
  // The stored (compressed) size is shown for present files, "-" when there is no file.
  const std::string size = format_size(p.stored_size);
  EXPECT_EQ(ls[1].substr(ls[1].size() - size.size()), size) << ls[1];
  EXPECT_EQ(ls[2].back(), '-');
}

TEST_F(DumpctlTest, ListAndInfoOfARawCore) {
  const std::string core = add_raw(1, 1, pseudo_core(5000, 1));
  add_raw(2, 2, "cut", 0, "", DumpState::Truncated);
  add(3, 3, std::nullopt, DumpState::MetadataOnly);
  const Result list = run({"list"});
  ASSERT_EQ(list.rc, 0) << list.err;
  const auto ls = lines(list.out);
  ASSERT_EQ(ls.size(), 4U);
  const std::size_t col = ls[0].find("COREFILE");
  EXPECT_EQ(ls[1].compare(col, 8, "present "), 0) << ls[1];
  EXPECT_EQ(ls[2].compare(col, 10, "truncated "), 0) << ls[2];
  const std::string size = format_size(core.size());  // stored size: the core's own
  EXPECT_EQ(ls[1].substr(ls[1].size() - size.size()), size) << ls[1];

  const Result info = run({"info", make_id(1)});
  ASSERT_EQ(info.rc, 0) << info.err;
  EXPECT_EQ(info.err, "");
  const auto has = [&](const std::string& s) {
    EXPECT_NE(info.out.find(s), std::string::npos) << "missing: " << s << "\n" << info.out;
  };
  has("Core Size: 4.9K (5000 bytes)\n");
  has("Stored Size: 4.9K (5000 bytes)\n");
  has("Compression: none (raw core)\n");
  has("Storage: " + store_ + "/" + make_id(1) + ".core (present)\n");
  // A dump without any core still reads "none", without "(raw core)".
  const Result meta = run({"info", make_id(3)});
  EXPECT_NE(meta.out.find("Compression: none\n"), std::string::npos) << meta.out;

  const Result json = run({"info", make_id(1), "--json=pretty"});
  ASSERT_EQ(json.rc, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["compression"], "none");
  EXPECT_EQ(j["path"], make_id(1) + ".core");
  EXPECT_EQ(j["stored_size"], j["core_size"]);
}

TEST_F(DumpctlTest, ListJsonRoundTripsArgvBytes) {
  DumpRecord r = add(1, 5, "x");
  r.id = make_id(2);
  r.timestamp_us = 6;
  r.argv = {"/bin/x", "", "a b", "new\nline", "\xff\xc0\x80", "caf\xc3\xa9"};
  r.exe = "/bin/\xff";
  insert(r);
  const Result res = run({"list", "--json=pretty"});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2U);
  EXPECT_EQ(j[0]["id"], make_id(1));
  EXPECT_EQ(j[1]["id"], make_id(2));
  EXPECT_FALSE(j[1].contains("argv")) << "the listing has coredumpctl's columns and ours, not the whole record";
  EXPECT_EQ(bytes_from_json(j[1]["exe"]), r.exe);
  // `info --json` has the whole record: argv byte for byte.
  const auto full = nlohmann::json::parse(run({"info", "--json=pretty", make_id(2)}).out);
  std::vector<std::string> argv;
  for (const auto& a : full["argv"]) argv.push_back(bytes_from_json(a).value());
  EXPECT_EQ(argv, r.argv);
  EXPECT_EQ(bytes_from_json(full["exe"]), r.exe);

  // On a terminal, JSON is pure ASCII.
  const Result tty = run({"list", "--json=pretty"}, /*tty=*/true);
  for (const char c : tty.out) EXPECT_LT(static_cast<unsigned char>(c), 0x80U);
  EXPECT_EQ(nlohmann::json::parse(tty.out), j);
}

TEST_F(DumpctlTest, ListReverseSinceUntilAndEmpty) {
  {
    const Result empty = run({"list"});
    EXPECT_EQ(empty.rc, 1);
    EXPECT_EQ(empty.err, "No coredumps found.\n");
    const Result empty_json = run({"list", "--json=pretty"});  // coredumpctl 252: nothing printed, exit 1
    EXPECT_EQ(empty_json.rc, 1);
    EXPECT_EQ(empty_json.out, "");
  }
  add(1, 10'000'000, "a");
  add(2, 20'000'000, "b");
  add(3, 30'000'000, "c");
  auto ids = [&](const Result& res) {
    std::vector<std::string> v;
    for (const auto& e : nlohmann::json::parse(res.out)) v.push_back(e["id"]);
    return v;
  };
  EXPECT_EQ(ids(run({"list", "--json=pretty", "--reverse"})),
            (std::vector<std::string>{make_id(3), make_id(2), make_id(1)}));
  EXPECT_EQ(ids(run({"list", "--json=pretty", "--since", "@20"})),
            (std::vector<std::string>{make_id(2), make_id(3)}));
  EXPECT_EQ(ids(run({"list", "--json=pretty", "--until", "1970-01-01 00:00:20"})),
            (std::vector<std::string>{make_id(1), make_id(2)}));
  const Result bad = run({"list", "--since", "next tuesday"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("invalid --since time"), std::string::npos);
  // No command at all means list; --store may follow the command.
  std::ostringstream out, err;
  EXPECT_EQ(dumpctl_main({"dumpctl", "--store", store_}, Io{out, err, false}), 0);
  EXPECT_EQ(lines(out.str()).size(), 4U);
  std::ostringstream out2, err2;
  EXPECT_EQ(dumpctl_main({"dumpctl", "list", "--store", store_}, Io{out2, err2, false}), 0);
  EXPECT_EQ(out2.str(), out.str());
}

// The container as coredumpd records it: extra["container"] = to_json(ContainerInfo).
TEST_F(DumpctlTest, ListContainerColumnFilterAndJson) {
  const std::string docker_id = "0123456789abcdef" + std::string(48, 'e');
  const std::string other_id = "0123456789abffff" + std::string(48, 'a');
  const auto with_container = [&](int n, const ContainerInfo& c) {
    DumpRecord r = add(n, n * 1'000'000, "core");
    r.extra["container"] = to_json(c);
    r.container_key = container_key(c);
    Index(store_, true).update(r);
  };
  ContainerInfo docker;
  docker.runtime = Runtime::Docker;
  docker.id = docker_id;
  docker.in_container = true;
  ContainerInfo other = docker;
  other.id = other_id;
  ContainerInfo web;
  web.runtime = Runtime::SystemdNspawn;
  web.name = "web\x1b";
  web.in_container = true;
  ContainerInfo unit;
  unit.runtime = Runtime::Systemd;
  unit.unit = "nginx.service";
  ContainerInfo unknown;
  unknown.in_container = true;
  unknown.pidns = 4026532999;
  with_container(1, docker);
  with_container(2, other);
  with_container(3, web);
  with_container(4, ContainerInfo{});  // the host
  with_container(5, unit);
  with_container(6, unknown);
  add(7, 7'000'000, "core");  // no container recorded

  const Result res = run({"list"});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto ls = lines(res.out);
  ASSERT_EQ(ls.size(), 8U) << res.out;
  const std::size_t col = ls[0].find("CONTAINER");
  ASSERT_NE(col, std::string::npos) << ls[0];
  const std::size_t exe_col = ls[0].find("EXE");
  const auto cell = [&](std::size_t i) {
    auto s = ls[i].substr(col, exe_col - col);
    return s.substr(0, s.find_last_not_of(' ') + 1);
  };
  EXPECT_EQ(cell(1), docker_id.substr(0, 12));
  EXPECT_EQ(cell(2), other_id.substr(0, 12));
  EXPECT_EQ(cell(3), "web\\x1b") << "names are escaped";
  EXPECT_EQ(cell(4), "-") << "host";
  EXPECT_EQ(cell(5), "-") << "a systemd unit is not a container";
  EXPECT_EQ(cell(6), "pidns:4026532999");
  EXPECT_EQ(cell(7), "-") << "nothing recorded";

  auto ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"list", "--json=pretty"});
    const Result r = run(args);
    std::vector<std::string> v;
    if (r.rc == 1 && r.err == "No coredumps found.\n") return v;  // coredumpctl 252: no "[]", exit 1
    EXPECT_EQ(r.rc, 0) << r.err;
    for (const auto& e : nlohmann::json::parse(r.out)) v.push_back(e["id"]);
    return v;
  };
  EXPECT_EQ(ids({"--container", "docker:" + docker_id}), std::vector<std::string>{make_id(1)}) << "by key";
  EXPECT_EQ(ids({"--container", docker_id.substr(0, 14)}), std::vector<std::string>{make_id(1)}) << "by id prefix";
  EXPECT_EQ(ids({"--container", docker_id.substr(0, 12)}), (std::vector<std::string>{make_id(1), make_id(2)}))
      << "a 12-char prefix both ids share";
  EXPECT_TRUE(ids({"--container", docker_id.substr(0, 11)}).empty()) << "prefixes shorter than 12 never match";
  EXPECT_EQ(ids({"--container", "web\x1b"}), std::vector<std::string>{make_id(3)}) << "by name";
  EXPECT_EQ(ids({"--container", "nspawn:web\x1b"}), std::vector<std::string>{make_id(3)});
  EXPECT_EQ(ids({"--container", "host"}), std::vector<std::string>{make_id(4)});
  EXPECT_EQ(ids({"--container", "systemd:nginx.service"}), std::vector<std::string>{make_id(5)});
  EXPECT_EQ(ids({"--container", "pidns:4026532999"}), std::vector<std::string>{make_id(6)});

  const Result none = run({"list", "--container", "nope"});
  EXPECT_EQ(none.rc, 1);
  EXPECT_EQ(none.err, "No coredumps found.\n");

  // --json carries the container key, null when none was recorded; `info --json` the object too.
  const auto all = nlohmann::json::parse(run({"list", "--json=pretty"}).out);
  ASSERT_EQ(all.size(), 7U);
  EXPECT_EQ(all[0]["container"], "docker:" + docker_id);
  EXPECT_EQ(all[2]["container"], "nspawn:web\x1b");
  EXPECT_EQ(all[3]["container"], "host");
  EXPECT_TRUE(all[6]["container"].is_null());
  const auto info = nlohmann::json::parse(run({"info", "--json=pretty", make_id(1)}).out);
  EXPECT_EQ(info["container"], "docker:" + docker_id);
  EXPECT_EQ(info["extra"]["container"]["runtime"], "docker");
  EXPECT_EQ(info["extra"]["container"]["id"], docker_id);
}

TEST_F(DumpctlTest, MissingStoreAndUsageErrors) {
  std::ostringstream out, err;
  EXPECT_EQ(dumpctl_main({"dumpctl", "--store", root_ + "/nope", "list"}, Io{out, err, false}), 1);
  EXPECT_EQ(err.str(),
            "dumpctl: no index at " + root_ + "/nope/index.sqlite: is this a coredumpd store?\n");
  EXPECT_EQ(run({"frobnicate"}).rc, 1);
  EXPECT_EQ(run({"dump"}).err, "dumpctl: No match found.\n");  // the newest dump: there is none
  const Result help = run({"--help"});
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("dumpctl"), std::string::npos);
}

// ---- info -----------------------------------------------------------------------------------

TEST_F(DumpctlTest, InfoSelectsByIdPrefixPidCommAndNewest) {
  add(1, 100, "a");
  add(2, 200, "b");
  DumpRecord r = add(3, 300, "c");
  r.id = "ffff" + make_id(4).substr(4);
  r.timestamp_us = 50;  // oldest, but has comm "prog3" too
  r.pid = 777;
  insert(r);

  const auto id_of = [&](const Result& res) {
    EXPECT_EQ(res.rc, 0) << res.err;
    const auto j = nlohmann::json::parse(res.out);
    return j["id"].get<std::string>();
  };
  EXPECT_EQ(id_of(run({"info", "--json=pretty"})), make_id(3));              // newest
  EXPECT_EQ(id_of(run({"info", "--json=pretty", make_id(2)})), make_id(2));  // full id
  EXPECT_EQ(id_of(run({"info", "--json=pretty", "ffff"})), r.id);            // unique prefix
  EXPECT_EQ(id_of(run({"info", "--json=pretty", "FFFF"})), r.id);            // case-insensitive
  EXPECT_EQ(id_of(run({"info", "--json=pretty", "101"})), make_id(1));       // PID
  EXPECT_EQ(id_of(run({"info", "--json=pretty", "777"})), r.id);
  EXPECT_EQ(id_of(run({"info", "--json=pretty", "-1", "prog3"})), make_id(3));     // COMM: newest of two
  EXPECT_EQ(id_of(run({"info", "--json=pretty", "/usr/bin/prog2"})), make_id(2));  // exe path

  const Result none = run({"info", "foo"});
  EXPECT_EQ(none.rc, 1);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "No coredumps found.\n");  // coredumpctl 252's message and exit code
  const Result hostile = run({"info", "a\nb\x1b"});
  EXPECT_EQ(hostile.err, "No coredumps found.\n");
  const Result ambiguous = run({"info", "0000000"});  // all ids 1..3 start with 0000000
  EXPECT_EQ(ambiguous.rc, 1);
  EXPECT_NE(ambiguous.err.find("ambiguous"), std::string::npos) << ambiguous.err;
}

TEST_F(DumpctlTest, InfoPrintsEveryField) {
  DumpRecord r;
  r.id = make_id(9);
  r.state = DumpState::Truncated;
  r.reason = "size limit of 1 MiB";
  r.timestamp_us = 1'764'536'645'123'456;  // 2025-11-30 21:04:05.123456 UTC
  r.pid = 4321;
  r.tid = 4322;
  r.crashing_tid_ns = 2;
  r.uid = 1000;
  r.euid = 0;
  r.gid = 100;
  r.egid = 5;
  r.comm = "evil\x1b]0;pwned\x07";
  r.exe = "/opt/app/bin/srv";
  r.argv = {"/opt/app/bin/srv", "--name=it's", "", "two words", "tab\there"};
  r.cwd = "/srv";
  r.cgroup = "12:pids:/a\n0::/system.slice/x.service\n";
  r.hostname = "box";
  r.boot_id = "0123456789abcdef0123456789abcdef";
  r.coredump_mask = 0x5;
  r.signal = SIGABRT;
  const std::string core(3000, 'C');
  const std::string z = zstd_compress(core);
  r.core_size = core.size();
  r.stored_size = z.size();
  r.compression = "zstd";
  r.path = r.id + ".zst";
  r.extra = {{"negotiation", {{"flags", "PIDFD"}}}, {"weird", "\xc2\x9b"}};
  write_file(store_ + "/" + r.path, z);
  insert(r);

  const Result res = run({"info", "4321", "--extra"});
  ASSERT_EQ(res.rc, 0) << res.err;
  const std::string& o = res.out;
  const auto has = [&](const std::string& s) {
    EXPECT_NE(o.find(s), std::string::npos) << "missing: " << s << "\n" << o;
  };
  has("            ID: " + r.id);
  has("           PID: 4321 (evil\\x1b]0;pwned\\x07)\n");
  has("           TID: 4322 (2 in its pid namespace)");
  has("           UID: 1000 (");  // the user's name, or the number again when there is none
  has("           GID: 100 (");
  has(" Effective IDs: uid 0 (root), gid 5 (");
  has("        Signal: 6 (ABRT)\n");
  has("     Timestamp: Sun 2025-11-30 21:04:05 UTC (");
  has(" ago)\n");
  has("Command Line: /opt/app/bin/srv '--name=it'\\''s' '' 'two words' $'tab\\there'");
  has("Executable: /opt/app/bin/srv");
  has("Working Dir: /srv");
  has(" Control Group: /system.slice/x.service\n");  // the unified path, one line
  has("Hostname: box");
  has("Boot ID: " + r.boot_id);
  has("Coredump Mask: 0x5 (PIDFD_COREDUMPED|PIDFD_COREDUMP_USER)");
  has("State: truncated (size limit of 1 MiB)");
  has("Core Size: 2.9K (3000 bytes)");
  has("Compression: zstd");
  has("Storage: " + store_ + "/" + r.path + " (truncated)");
  has("\"flags\": \"PIDFD\"");
  has("\\u009b");  // a C1 control inside extra is escaped too
  for (const char c : o) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f)) << "raw control byte " << int(u);
  }
  EXPECT_NE(res.err.find("warning: the core of this dump is truncated"), std::string::npos);
  // Without --extra the raw metadata JSON stays out of the text.
  const Result plain = run({"info", "4321"});
  EXPECT_EQ(plain.out.find("\"flags\": \"PIDFD\""), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("Storage: "), std::string::npos) << plain.out;

  // Failed dumps warn as well; an interrupted one too.
  r.id = make_id(10);
  r.state = DumpState::Interrupted;
  r.reason = "daemon restarted";
  r.path = "";
  r.timestamp_us += 1;
  insert(r);
  const Result intr = run({"info"});
  EXPECT_EQ(intr.rc, 0);
  EXPECT_NE(intr.err.find("warning: the daemon stopped"), std::string::npos) << intr.err;
  EXPECT_NE(intr.out.find("State: interrupted (daemon restarted)"), std::string::npos);
}

// A stream cut short (a SIGKILL mid-dump): info and debug say how short, and info why.
TEST_F(DumpctlTest, InfoAndDebugSayHowShortAShortCoreIs) {
  DumpRecord r = record(2, 1, DumpState::Truncated);
  const std::string z = zstd_compress(std::string(3000, 'S'));
  r.core_size = 3000;
  r.stored_size = z.size();
  r.compression = "zstd";
  r.path = r.id + ".zst";
  write_file(store_ + "/" + r.path, z);
  r.reason = "core stream ended after 3000 of the 9000 bytes its program headers promise: the crashing task "
             "was killed by SIGKILL while its core streamed";
  r.exe = "/bin/true";
  r.extra["stored_core_bytes"] = 3000;
  r.extra["core_expected_bytes"] = 9000;
  r.extra["core_received_bytes"] = 3000;
  r.extra["task_exit_status"] = SIGKILL;
  insert(r);

  const Result info = run({"info", make_id(2)});
  ASSERT_EQ(info.rc, 0) << info.err;
  const std::string warning = "the core is short: 3000 of 9000 bytes arrived: " + r.reason +
                              "; a debugger will see missing memory";
  EXPECT_NE(info.err.find("dumpctl: warning: " + warning), std::string::npos) << info.err;
  EXPECT_NE(info.out.find("Warning: " + warning), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("Short Core: 3000 of 9000 bytes arrived (the end the program headers promise)\n"
                          "                task killed by SIGKILL\n"),
            std::string::npos)
      << info.out;

  const Result debug = run({"debug", make_id(2), "--debugger", "/bin/sh", "--", "-c", "exit 0", "sh"});
  EXPECT_EQ(debug.rc, 0) << debug.err;
  EXPECT_NE(debug.err.find("warning: the core of coredump " + make_id(2) + " is short: 3000 of 9000 bytes arrived (" +
                           r.reason + "); the debugger will see missing memory and segments extending past the end "
                           "of the file"),
            std::string::npos)
      << debug.err;
}

TEST_F(DumpctlTest, InfoShowsContainerViewsOfIdsAndTheRule) {
  DumpRecord r;
  r.id = make_id(3);
  r.state = DumpState::MetadataOnly;
  r.timestamp_us = 5;
  r.pid = 4321;
  r.uid = r.euid = 61234;
  r.gid = r.egid = 61234;
  r.comm = "app";
  r.extra = {{"rule", "docker-apps"},
             {"container", {{"in_container", true}, {"key", "docker:abc"}, {"ns_pid", 2}, {"ns_uid", 0}, {"ns_gid", 0}}}};
  insert(r);
  DumpRecord host = r;
  host.id = make_id(4);
  host.pid = 77;
  host.timestamp_us = 6;
  host.extra = {{"rule", ""}, {"container", {{"in_container", false}, {"key", "host"}, {"ns_pid", 77}, {"ns_uid", 61234}}}};
  insert(host);

  const Result res = run({"info", "4321"});
  ASSERT_EQ(res.rc, 0) << res.err;
  EXPECT_NE(res.out.find("PID: 4321 (app)\n"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("UID: 61234 (61234)\n"), std::string::npos) << res.out;  // no such user: the number
  EXPECT_NE(res.out.find("Namespace IDs: pid 2, uid 0, gid 0 (as the crashing task's namespaces see them)\n"),
            std::string::npos)
      << res.out;
  EXPECT_NE(res.out.find("Container: docker:abc\n"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("Rule: docker-apps\n"), std::string::npos) << res.out;

  // On the host the views agree: nothing is added, and no Container line.
  const Result h = run({"info", "77"});
  ASSERT_EQ(h.rc, 0) << h.err;
  EXPECT_NE(h.out.find("PID: 77 (app)\n"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("Namespace IDs:"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("Effective IDs:"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("Container:"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("Rule: (defaults)\n"), std::string::npos) << h.out;
}

TEST_F(DumpctlTest, InfoCommandLineRoundTripsThroughAShell) {
  const std::vector<std::string> argv = {"/usr/bin/x",
                                         "",
                                         "plain",
                                         "with space",
                                         "it's",
                                         "\"dq\"",
                                         "$HOME",
                                         "`id`",
                                         "a\\b",
                                         "new\nline",
                                         "\x1b[31m",
                                         "\xff\xfe",
                                         "caf\xc3\xa9",
                                         "\xc2\x9b",
                                         "*",
                                         "~",
                                         "a;b|c&d",
                                         "\t",
                                         "\x01\x02\x03",
                                         "\xe2\x80\xae"
                                         "rtl",
                                         "x\x7fy",
                                         "'"};
  DumpRecord r = add(1, 1, "core");
  r.id = make_id(2);
  r.argv = argv;
  insert(r);
  const Result res = run({"info", make_id(2)});
  ASSERT_EQ(res.rc, 0) << res.err;
  const std::string key = "Command Line: ";
  const std::size_t at = res.out.find(key);
  ASSERT_NE(at, std::string::npos);
  const std::size_t eol = res.out.find('\n', at);
  const std::string quoted = res.out.substr(at + key.size(), eol - at - key.size());
  EXPECT_EQ(quoted, shell_join(argv));
  // $'...' needs bash (or any POSIX.1-2024 shell); Debian 12's dash 0.5.12 predates it.
  EXPECT_EQ(shell_parse("/bin/bash", quoted), argv);
  // Arguments without control bytes or invalid UTF-8 round-trip through plain /bin/sh.
  std::vector<std::string> printable;
  for (const auto& a : argv) {
    if (shell_quote(a).rfind("$'", 0) != 0) printable.push_back(a);
  }
  ASSERT_GE(printable.size(), 12U);
  EXPECT_EQ(shell_parse("/bin/sh", shell_join(printable)), printable);
}

// ---- dump -----------------------------------------------------------------------------------

TEST_F(DumpctlTest, DumpIsByteIdenticalToFileAndStdout) {
  const std::string big = pseudo_core(6 * 1024 * 1024 + 123, 42);
  add(1, 1, big);
  add(2, 2, std::string());                                                      // an empty core
  add(3, 3, pseudo_core(3 * 1024 * 1024, 7), DumpState::Complete, 1024 * 1024);  // 3 frames
  const std::string file = out_dir_ + "/core1";
  const Result res = run({"dump", make_id(1), "-o", file});
  ASSERT_EQ(res.rc, 0) << res.err;
  EXPECT_EQ(res.out, "");
  EXPECT_TRUE(read_file(file) == big);
  EXPECT_EQ(fs::file_size(file), big.size());

  const Result to_stdout = run({"dump", make_id(1)});
  ASSERT_EQ(to_stdout.rc, 0) << to_stdout.err;
  EXPECT_TRUE(to_stdout.out == big);
  const Result dash = run({"dump", make_id(1), "-o", "-"});
  EXPECT_TRUE(dash.out == big);

  const Result empty = run({"dump", make_id(2), "-o", out_dir_ + "/empty"});
  ASSERT_EQ(empty.rc, 0) << empty.err;
  EXPECT_TRUE(fs::exists(out_dir_ + "/empty"));
  EXPECT_EQ(fs::file_size(out_dir_ + "/empty"), 0U);

  const Result frames = run({"dump", make_id(3)});
  ASSERT_EQ(frames.rc, 0) << frames.err;
  EXPECT_TRUE(frames.out == pseudo_core(3 * 1024 * 1024, 7));

  // Overwriting an existing file replaces it.
  write_file(out_dir_ + "/empty", "old contents");
  ASSERT_EQ(run({"dump", make_id(3), "-o", out_dir_ + "/empty"}).rc, 0);
  EXPECT_TRUE(read_file(out_dir_ + "/empty") == pseudo_core(3 * 1024 * 1024, 7));
  // Only the requested outputs exist: no temporary files were left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(out_dir_), fs::directory_iterator()), 2);
}

TEST_F(DumpctlTest, DumpOfARawCoreIsByteIdentical) {
  // Bigger than the 1 MiB reads and not a multiple of them; then a sparse file with a hole in the
  // middle that spans several reads, as the daemon links a sparse spool file; then an empty core.
  const std::string big = add_raw(1, 1, pseudo_core(3 * 1024 * 1024 + 123, 1));
  const std::string sparse =
      add_raw(2, 2, pseudo_core(8192, 2), 5 * 1024 * 1024 + 7, pseudo_core(4096 + 3, 3));
  struct stat sb {};
  ASSERT_EQ(::stat((store_ + "/" + make_id(2) + ".core").c_str(), &sb), 0);
  ASSERT_LT(static_cast<std::uint64_t>(sb.st_blocks) * 512U, 1024U * 1024U) << "not sparse";
  add_raw(3, 3, "");
  // A truncated raw core holds the bytes that were kept, less than core_size: dumped with a warning.
  DumpRecord t = record(4, 4, DumpState::Truncated);
  const std::string kept = unit::store_raw_core(store_, t, pseudo_core(100000, 4));
  t.core_size = 1000000;
  t.extra["stored_core_bytes"] = kept.size();
  insert(t);

  for (const auto& [n, want] : std::vector<std::pair<int, std::string>>{
           {1, big}, {2, sparse}, {3, ""}, {4, kept}}) {
    const std::string file = out_dir_ + "/core" + std::to_string(n);
    const Result res = run({"dump", make_id(n), "-o", file});
    ASSERT_EQ(res.rc, 0) << n << ": " << res.err;
    EXPECT_EQ(fs::file_size(file), want.size()) << n;
    EXPECT_TRUE(read_file(file) == want) << n;
    EXPECT_EQ(res.err.find("truncated") != std::string::npos, n == 4) << res.err;
  }
  const Result to_stdout = run({"dump", make_id(2)});
  ASSERT_EQ(to_stdout.rc, 0) << to_stdout.err;
  EXPECT_TRUE(to_stdout.out == sparse);
  // The store is read, never changed.
  EXPECT_TRUE(read_file(store_ + "/" + make_id(1) + ".core") == big);
}

TEST_F(DumpctlTest, RawCoreShorterThanItsCoreSizeIsAnError) {
  DumpRecord r = record(1, 1, DumpState::Complete);
  const std::string core = unit::store_raw_core(store_, r, pseudo_core(300000, 1));
  r.core_size = core.size() + 10;  // the file lost its last bytes, or the index is wrong
  insert(r);
  DumpRecord odd = record(2, 2, DumpState::Complete);
  unit::store_raw_core(store_, odd, "raw");
  odd.compression = "lz4";  // only "zstd" and "none" are known
  insert(odd);

  const std::string file = out_dir_ + "/core";
  const Result res = run({"dump", make_id(1), "-o", file});
  EXPECT_EQ(res.rc, 1);
  EXPECT_EQ(res.err, "dumpctl: core file " + store_ + "/" + make_id(1) +
                         ".core is corrupt: it holds 300000 bytes, the index says 300010\n");
  EXPECT_FALSE(fs::exists(file));
  EXPECT_EQ(run({"dump", make_id(1)}).rc, 1);

  // The debugger is not run on it either (it reads the file in place, so dumpctl checks the size).
  const std::string ran = out_dir_ + "/ran";
  const Result dbg = run({"debug", make_id(1), "--debugger", "/bin/sh", "--", "-c",
                          "touch '" + ran + "'", "sh"});
  EXPECT_EQ(dbg.rc, 1);
  EXPECT_NE(dbg.err.find("it holds 300000 bytes, the index says 300010"), std::string::npos)
      << dbg.err;
  EXPECT_FALSE(fs::exists(ran));

  const Result lz4 = run({"dump", make_id(2), "-o", file});
  EXPECT_EQ(lz4.rc, 1);
  EXPECT_EQ(lz4.err, "dumpctl: coredump " + make_id(2) + ": unsupported compression 'lz4'\n");
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(fs::is_empty(out_dir_));
  EXPECT_TRUE(fs::is_empty(tmp_dir_));
}

TEST_F(DumpctlTest, DumpRefusesATerminal) {
  add(1, 1, "core");
  const Result res = run({"dump", make_id(1)}, /*tty=*/true);
  EXPECT_EQ(res.rc, 1);
  EXPECT_EQ(res.out, "");
  EXPECT_NE(res.err.find("refusing to write a core dump to a terminal"), std::string::npos);
  // An explicit file is fine even when stdout is a terminal.
  EXPECT_EQ(run({"dump", make_id(1), "-o", out_dir_ + "/c"}, true).rc, 0);
}

TEST_F(DumpctlTest, DumpFailuresLeaveNoOutputFile) {
  const std::string core = pseudo_core(2 * 1024 * 1024, 3);
  DumpRecord missing = add(1, 1, core);
  fs::remove(store_ + "/" + missing.path);
  DumpRecord corrupt = add(2, 2, core);
  {  // flip bytes in the middle of the compressed data
    std::string z = read_file(store_ + "/" + corrupt.path);
    for (std::size_t i = z.size() / 2; i < z.size() / 2 + 64; ++i) z[i] = static_cast<char>(~z[i]);
    write_file(store_ + "/" + corrupt.path, z);
  }
  DumpRecord cut = add(3, 3, core);
  {
    const std::string z = read_file(store_ + "/" + cut.path);
    write_file(store_ + "/" + cut.path, z.substr(0, z.size() - 100));
  }
  DumpRecord wrong_size = add(4, 4, core);
  wrong_size.id = make_id(5);
  wrong_size.timestamp_us = 5;
  wrong_size.core_size = core.size() + 1;  // index disagrees with the file
  insert(wrong_size);
  add(6, 6, std::nullopt, DumpState::Failed);
  write_file(store_ + "/notzstd.zst", "definitely not zstd data");
  DumpRecord garbage = add(7, 7, std::nullopt);
  garbage.id = make_id(8);
  garbage.path = "notzstd.zst";
  garbage.compression = "zstd";
  garbage.core_size = 10;
  insert(garbage);

  for (int n : {1, 2, 3, 5, 6, 8}) {
    const std::string file = out_dir_ + "/core" + std::to_string(n);
    const Result res = run({"dump", make_id(n), "-o", file});
    EXPECT_EQ(res.rc, 1) << n;
    EXPECT_EQ(res.err.rfind("dumpctl: ", 0), 0U) << res.err;
    EXPECT_FALSE(fs::exists(file)) << n << ": " << res.err;
  }
  EXPECT_TRUE(fs::is_empty(out_dir_));  // no temporary files either
  EXPECT_NE(run({"dump", make_id(1)}).err.find("is missing"), std::string::npos);
  EXPECT_NE(run({"dump", make_id(6)}).err.find("has no stored core (failed)"), std::string::npos);
  EXPECT_NE(run({"dump", make_id(3)}).err.find("truncated"), std::string::npos);

  // A failure never clobbers an existing file.
  write_file(out_dir_ + "/keep", "precious");
  EXPECT_EQ(run({"dump", make_id(2), "-o", out_dir_ + "/keep"}).rc, 1);
  EXPECT_EQ(read_file(out_dir_ + "/keep"), "precious");
}

TEST_F(DumpctlTest, DumpRefusesUnsafePaths) {
  write_file(root_ + "/secret.zst", zstd_compress("secret"));
  DumpRecord r = add(1, 1, std::nullopt);
  // Index::insert refuses such paths; simulate a tampered index by writing SQL directly is not
  // needed: core_file_path() is the guard dumpctl relies on.
  r.state = DumpState::Complete;
  r.path = "../secret.zst";
  EXPECT_FALSE(core_file_path(store_, r).has_value());
  r.path = "/etc/passwd";
  EXPECT_FALSE(core_file_path(store_, r).has_value());
  r.path = "x.zst";
  EXPECT_EQ(core_file_path(store_, r), store_ + "/x.zst");
  r.state = DumpState::Failed;
  EXPECT_FALSE(core_file_path(store_, r).has_value());
}

// ---- debug ----------------------------------------------------------------------------------

TEST_F(DumpctlTest, DebugRunsTheDebuggerOnATemporaryCore) {
  const std::string core = pseudo_core(1024 * 1024, 5);
  DumpRecord r = add(1, 1, core);
  r.id = make_id(2);
  r.exe = "/bin/true";
  insert(r);
  const std::string copy = out_dir_ + "/seen-core";
  const std::string args = out_dir_ + "/seen-args";
  // The "debugger" is sh: it records its arguments, copies the core and exits with 3.
  const std::string script = "printf '%s\\n' \"$@\" > '" + args + "'; cp \"$3\" '" + copy +
                             "'; ls \"$TMPDIR\" >> '" + args + "'; exit 3";
  const Result res = run({"debug", make_id(2), "--debugger", "/bin/sh", "--", "-c", script, "sh"});
  EXPECT_EQ(res.rc, 3) << res.err;
  EXPECT_TRUE(read_file(copy) == core);
  const auto seen = lines(read_file(args));
  ASSERT_EQ(seen.size(), 4U) << read_file(args);
  EXPECT_EQ(seen[0], "/bin/true");
  EXPECT_EQ(seen[1], "-c");
  EXPECT_EQ(seen[2].rfind(tmp_dir_ + "/dumpctl-core-", 0), 0U) << seen[2];
  EXPECT_EQ(seen[3], fs::path(seen[2]).filename().string());  // it existed while running
  EXPECT_TRUE(fs::is_empty(tmp_dir_));                        // and is gone now

  // The executable no longer exists: the debugger gets the core alone, with a warning.
  const Result gone = run({"debug", make_id(1), "--debugger", "/bin/sh", "--", "-c",
                           "test \"$1\" = -c && test -s \"$2\" && test $# -eq 2", "sh"});
  EXPECT_EQ(gone.rc, 0) << gone.err;
  EXPECT_NE(gone.err.find("is gone"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(tmp_dir_));
}

TEST_F(DumpctlTest, DebugRunsTheDebuggerOnARawCoreInPlace) {
  const std::string core = add_raw(1, 1, pseudo_core(2 * 1024 * 1024, 1), 1024 * 1024, "tail");
  DumpRecord r = record(2, 2, DumpState::Truncated);
  r.reason = "size limit";
  r.exe = "/bin/true";
  const std::string kept = unit::store_raw_core(store_, r, "kept bytes");
  r.core_size = 4096;
  r.extra["stored_core_bytes"] = kept.size();
  insert(r);
  const std::string args = out_dir_ + "/seen-args";
  const std::string copy = out_dir_ + "/seen-core";
  // The "debugger" records its arguments and what $TMPDIR holds meanwhile, and copies the core.
  const std::string script = "printf '%s\\n' \"$@\" > '" + args + "'; ls -A \"$TMPDIR\" >> '" +
                             args + "'; cp \"$3\" '" + copy + "'; exit 4";

  const Result res = run({"debug", make_id(2), "--debugger", "/bin/sh", "--", "-c", script, "sh"});
  EXPECT_EQ(res.rc, 4) << res.err;
  EXPECT_NE(res.err.find("warning: the core of coredump " + make_id(2) +
                         " is truncated; the debugger will see missing memory"),
            std::string::npos)
      << res.err;
  // The store's file itself, and no temporary copy was made.
  EXPECT_EQ(lines(read_file(args)),
            (std::vector<std::string>{"/bin/true", "-c", store_ + "/" + make_id(2) + ".core"}));
  EXPECT_TRUE(read_file(copy) == kept);
  EXPECT_TRUE(read_file(store_ + "/" + make_id(2) + ".core") == kept);  // still there, unchanged

  // The executable is gone: the core alone, still in place (a sparse one here).
  const Result gone = run({"debug", make_id(1), "--debugger", "/bin/sh", "--", "-c",
                           "cp \"$2\" '" + copy + "'; test $# -eq 2 && test \"$2\" = '" + store_ +
                               "/" + make_id(1) + ".core'",
                           "sh"});
  EXPECT_EQ(gone.rc, 0) << gone.err;
  EXPECT_NE(gone.err.find("is gone"), std::string::npos) << gone.err;
  EXPECT_TRUE(read_file(copy) == core);
  EXPECT_TRUE(fs::is_empty(tmp_dir_));
}

TEST_F(DumpctlTest, DebugErrors) {
  add(1, 1, "core");
  const Result nodebugger = run({"debug", make_id(1), "--debugger", "/nonexistent/gdb"});
  EXPECT_EQ(nodebugger.rc, 1);
  EXPECT_NE(nodebugger.err.find("cannot run /nonexistent/gdb"), std::string::npos)
      << nodebugger.err;
  EXPECT_TRUE(fs::is_empty(tmp_dir_));
  add(2, 2, std::nullopt, DumpState::Rejected);
  EXPECT_EQ(run({"debug", make_id(2), "--debugger", "/bin/true"}).rc, 1);
  EXPECT_TRUE(fs::is_empty(tmp_dir_));
}

// ---- helpers ---------------------------------------------------------------------------------

TEST(DumpctlFormat, ShellQuote) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("/usr/bin/x"), "/usr/bin/x");
  EXPECT_EQ(shell_quote("--opt=a,b:c@d%e+f"), "--opt=a,b:c@d%e+f");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(shell_quote("a\nb"), "$'a\\nb'");
  EXPECT_EQ(shell_quote("\x1b"
                        "1"),
            "$'\\0331'");  // octal stays exactly three digits
  EXPECT_EQ(shell_quote("\xff'\\"), "$'\\377\\'\\\\'");
  EXPECT_EQ(shell_join({"a", "", "b c"}), "a '' 'b c'");
}

TEST(DumpctlFormat, SizesTimesAndMasks) {
  EXPECT_EQ(format_size(0), "0B");
  EXPECT_EQ(format_size(1023), "1023B");
  EXPECT_EQ(format_size(1536), "1.5K");
  EXPECT_EQ(format_size(3ULL << 30), "3.0G");
  EXPECT_EQ(format_size(UINT64_MAX), "16.0E");
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(format_timestamp(0, false), "Thu 1970-01-01 00:00:00 UTC");
  EXPECT_EQ(format_timestamp(1'764'536'645'000'042, true), "Sun 2025-11-30 21:04:05.000042 UTC");
  EXPECT_EQ(format_timestamp(-1, true), "Wed 1969-12-31 23:59:59.999999 UTC");
  EXPECT_EQ(parse_time_spec("@0"), 0);
  EXPECT_EQ(parse_time_spec("@1764536645"), 1'764'536'645'000'000);
  EXPECT_EQ(parse_time_spec("2025-11-30 21:04:05"), 1'764'536'645'000'000);
  EXPECT_EQ(parse_time_spec("2025-11-30T21:04"), 1'764'536'640'000'000);
  EXPECT_EQ(parse_time_spec("2025-11-30"), 1'764'460'800'000'000);
  EXPECT_TRUE(parse_time_spec("now").has_value());
  EXPECT_TRUE(parse_time_spec("yesterday").has_value());
  EXPECT_LT(*parse_time_spec("yesterday"), *parse_time_spec("today"));
  EXPECT_FALSE(parse_time_spec("").has_value());
  EXPECT_FALSE(parse_time_spec("@").has_value());
  EXPECT_FALSE(parse_time_spec("@12x").has_value());
  EXPECT_FALSE(parse_time_spec("2025-11-30 junk").has_value());
  EXPECT_EQ(describe_coredump_mask(0), "0x0");
  EXPECT_EQ(describe_coredump_mask(0x9), "0x9 (PIDFD_COREDUMPED|PIDFD_COREDUMP_ROOT)");
  EXPECT_EQ(describe_coredump_mask(0x32), "0x32 (PIDFD_COREDUMP_SKIP|0x30)");
}

}  // namespace
}  // namespace coredumpd::cli

// The readable summary of the collected metadata: each section from the daemon's keys, hostile
// bytes escaped, odd types skipped rather than thrown on.
TEST(InfoDetails, SummarisesTheCollectedMetadata) {
  using coredumpd::cli::info_details;
  const nlohmann::json extra = {
      {"container", {{"key", "docker:0123456789ab"}, {"runtime", "docker"}, {"name", "web"}, {"ns_pid", 7},
                     {"ns_uid", 0}, {"ns_gid", 0}, {"hostname", "box\x1b[2J"}}},
      {"rule", "keep-web"},
      {"negotiation", {{"offered", 0xF}, {"acked", 0x9}, {"mode", "kernel"}, {"wait", "granted"},
                       {"close_files", "not offered"}, {"records", "not offered"}, {"sparse", "declined by policy"},
                       {"memory_types", "not offered"}}},
      {"handshake_us", 12800}, {"drain_start_us", 412}, {"stream_us", 9016}, {"released_us", 9313}, {"stored_us", 24298},
      {"threads", 3}, {"si_code", 1}, {"fault_address", 0x10},
      {"proc", {{"fds", {{{"fd", 0}, {"target", "/dev/null"}, {"pos", 0}, {"flags", "0100000"}},
                         {{"fd", 3}, {"target", "/tmp/evil\nname"}, {"pos", 12}, {"flags", "02"},
                          {"locks", {"1: POSIX  ADVISORY  WRITE 998 fe:00:1234 0 EOF"}}}}},
                {"locks", {"1: POSIX  ADVISORY  WRITE 998 fe:00:1234 0 EOF"}},
                {"smaps_rollup", "x [rollup]\nRss:                2536 kB\nPss:  485 kB\nAnonymous:  196 kB\nSwap:  0 kB\n"}}},
      {"collect_errors", {{"environ", "skipped: handshake deadline"}}},
      {"environ", {"A=1", "B=2"}},
  };
  std::map<std::string, std::string> got;
  std::vector<std::string> order;
  for (const auto& f : info_details(extra)) {
    order.push_back(f.label);
    got[f.label] = f.value;
  }
  EXPECT_EQ(order, (std::vector<std::string>{"Negotiation", "Timing", "Threads",
                                             "Signal Info", "Open Files", "Locks", "Memory", "Collector Errors",
                                             "Environment"}));
  EXPECT_EQ(got["Negotiation"],
            "offered 0xf, acked 0x9, mode kernel\nwait: granted\nclose_files: not offered\nrecords: not offered\n"
            "sparse: declined by policy\nmemory_types: not offered");
  EXPECT_EQ(got["Timing"], "handshake 12.8 ms (accept to ack)\nfirst read 0.4 ms, stream ended 9.0 ms, task released 9.3 ms, stored 24.3 ms after the ack");
  EXPECT_EQ(got["Signal Info"], "si_code 1, fault address 0x10");
  EXPECT_EQ(got["Open Files"],
            "0: /dev/null (pos 0, flags 0100000)\n3: /tmp/evil\\nname (pos 12, flags 02)\n"
            "    lock 1: POSIX  ADVISORY  WRITE 998 fe:00:1234 0 EOF");
  EXPECT_EQ(got["Locks"], "1: POSIX  ADVISORY  WRITE 998 fe:00:1234 0 EOF");
  EXPECT_EQ(got["Memory"], "Rss 2536 kB, Pss 485 kB, Anonymous 196 kB, Swap 0 kB");
  EXPECT_EQ(got["Collector Errors"], "environ: skipped: handshake deadline");
  EXPECT_EQ(got["Environment"], "2 variables (dumpctl info --json shows them)");

  // A host crash, and metadata of the wrong shapes: skipped, never thrown on.
  const auto host = info_details({{"container", {{"key", "host"}}}, {"rule", ""}, {"negotiation", 5},
                                  {"proc", {{"fds", "nope"}, {"locks", nlohmann::json::array()}}}});
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0].label, "Locks");
  EXPECT_EQ(host[0].value, "none held");
  EXPECT_TRUE(info_details(nlohmann::json::array()).empty());

  // More descriptors than shown: counted, not listed.
  nlohmann::json many = {{"proc", {{"fds", nlohmann::json::array()}}}};
  for (int i = 0; i < 40; ++i) many["proc"]["fds"].push_back({{"fd", i}, {"target", "/dev/null"}});
  const auto fds = info_details(many, 32);
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_NE(fds[0].value.find("... 8 more"), std::string::npos) << fds[0].value;
}

namespace coredumpd::cli {
namespace {

// ---- short ids (issue 20 item 8) ------------------------------------------------------------

// Ids of a burst: the same timestamp half (the daemon's first 16 hex digits), random tails; two
// tails share 6 more digits. `list` shows each id as its shortest unambiguous prefix (>= 12 chars),
// --json says the same, and `info` resolves every shown prefix to its own record.
// A record without a core: the si_code the pidfd gave (PIDFD_INFO_COREDUMP_CODE), or why there is
// none; a code, when present, wins over the reason.
TEST(InfoDetails, SignalInfoFromThePidfdOrWhyNot) {
  using coredumpd::cli::info_details;
  const auto signal_info = [](const nlohmann::json& extra) {
    for (const auto& f : info_details(extra))
      if (f.label == "Signal Info") return f.value;
    return std::string("(none)");
  };
  EXPECT_EQ(signal_info({{"si_code", -6}}), "si_code -6");
  EXPECT_EQ(signal_info({{"si_code_unavailable", "this kernel does not report it\x1b"}}),
            "si_code not known: this kernel does not report it\\x1b");
  EXPECT_EQ(signal_info({{"si_code", 1}, {"si_code_unavailable", "x"}}), "si_code 1");
  EXPECT_EQ(signal_info({{"si_code_unavailable", 5}}), "(none)") << "an odd type is skipped";
}

TEST_F(DumpctlTest, ListShowsPrefixesThatInfoResolvesInABurst) {
  std::vector<std::string> ids;
  std::mt19937_64 rng(20);
  for (int n = 0; n < 29; ++n) {
    char tail[17];
    std::snprintf(tail, sizeof tail, "%016llx", static_cast<unsigned long long>(rng()));
    ids.push_back(std::string("00065b3c2d1e0f00") + tail);
  }
  ids[1] = ids[0].substr(0, 22) + "0123456789";  // shares 22 characters with ids[0]
  for (int n = 0; n < 29; ++n) {
    DumpRecord r = record(n, 1000 + n, DumpState::MetadataOnly);
    r.id = ids[static_cast<std::size_t>(n)];
    insert(r);
  }
  add(40, 5000, "x");  // an id of another time: 12 characters tell it apart

  const Result json = run({"list", "--json=pretty"});
  ASSERT_EQ(json.rc, 0) << json.err;
  const Result table = run({"list"});
  ASSERT_EQ(table.rc, 0) << table.err;
  for (const auto& j : nlohmann::json::parse(json.out)) {
    const std::string id = j["id"].get<std::string>();
    const std::string shown = j["short_id"].get<std::string>();
    ASSERT_EQ(id.rfind(shown, 0), 0U) << shown << " is not a prefix of " << id;
    EXPECT_NE(table.out.find(" " + shown + " "), std::string::npos) << shown << "\n" << table.out;
    // It resolves to its record, and one character less would not (unless at the minimum).
    const Result info = run({"info", "--json=pretty", shown});
    ASSERT_EQ(info.rc, 0) << info.err;
    const auto ij = nlohmann::json::parse(info.out);
    EXPECT_EQ(ij["id"], id);
    EXPECT_EQ(ij["short_id"], shown);
    if (shown.size() > 12) {
      const Result shorter = run({"info", shown.substr(0, shown.size() - 1)});
      EXPECT_NE(shorter.err.find("ambiguous"), std::string::npos) << shorter.err;
    } else {
      EXPECT_EQ(shown.size(), 12U);
    }
  }
  // The 12 characters the old `list` showed are ambiguous for the burst.
  EXPECT_NE(run({"info", ids[5].substr(0, 12)}).err.find("ambiguous"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(run({"info", "--json=pretty", make_id(40)}).out)["short_id"],
            make_id(40).substr(0, 12));
  // ids[0] and ids[1] need 23 characters, the rest of the burst 17 or more.
  EXPECT_EQ(nlohmann::json::parse(run({"info", "--json=pretty", ids[1]}).out)["short_id"], ids[1].substr(0, 23));
}

// `list --container` filters the rows but shortens ids against the whole store, since `info`
// resolves against all of it.
TEST_F(DumpctlTest, FilteredListShortensAgainstTheWholeStore) {
  DumpRecord a = record(1, 100, DumpState::MetadataOnly);
  a.id = "0006aaaaaaaaaaaa1111111111111111";
  ContainerInfo docker;
  docker.runtime = Runtime::Docker;
  docker.id = "0123456789abcdef" + std::string(48, 'e');
  docker.in_container = true;
  a.extra["container"] = to_json(docker);
  a.container_key = container_key(docker);
  insert(a);
  DumpRecord b = record(2, 200, DumpState::MetadataOnly);
  b.id = "0006aaaaaaaaaaaa2222222222222222";
  insert(b);
  const Result res = run({"list", "--json=pretty", "--container", *a.container_key});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  ASSERT_EQ(j.size(), 1U) << res.out;
  EXPECT_EQ(j[0]["short_id"], "0006aaaaaaaaaaaa1");
}

// ---- holes for zero runs (issue 20 item 9) -------------------------------------------------

// A 64 MiB core of zeros with a little data: `dump -o` and `debug`'s temporary copy have its size
// but take the disk of its data only; standard output gets every byte.
TEST_F(DumpctlTest, DumpAndDebugWriteZeroRunsAsHoles) {
  std::string core(64 * 1024 * 1024, '\0');
  const std::string head = pseudo_core(64 * 1024, 3);
  core.replace(0, head.size(), head);
  core[40 * 1024 * 1024 + 17] = 'x';
  add(1, 1, core);
  const std::string file = out_dir_ + "/core1";
  const Result res = run({"dump", make_id(1), "-o", file});
  ASSERT_EQ(res.rc, 0) << res.err;
  EXPECT_TRUE(read_file(file) == core);
  struct stat sb {};
  ASSERT_EQ(::stat(file.c_str(), &sb), 0);
  EXPECT_EQ(static_cast<std::size_t>(sb.st_size), core.size());
  EXPECT_LT(static_cast<std::uint64_t>(sb.st_blocks) * 512, 4U * 1024 * 1024) << "not sparse";
  EXPECT_TRUE(run({"dump", make_id(1)}).out == core);

  // The "debugger" reports the copy's size and allocated KiB (du), and fails if it differs.
  const std::string seen = out_dir_ + "/seen";
  const Result dbg = run({"debug", make_id(1), "--debugger", "/bin/sh", "--", "-c",
                          "for a; do p=$a; done; stat -c %s \"$p\" > '" + seen + "'; du -k \"$p\" | cut -f1 >> '" +
                              seen + "'",
                          "sh"});
  ASSERT_EQ(dbg.rc, 0) << dbg.err;
  const auto l = lines(read_file(seen));
  ASSERT_EQ(l.size(), 2U) << read_file(seen);
  EXPECT_EQ(l[0], std::to_string(core.size()));
  EXPECT_LT(std::stoul(l[1]), 4096U) << "KiB allocated to the debugger's copy";
  EXPECT_TRUE(fs::is_empty(tmp_dir_));
}

TEST(DumpctlShortIds, ShortestUniquePrefixOfAtLeastTwelve) {
  const ShortIds s({"aaaaaaaaaaaaaaaa01", "aaaaaaaaaaaaaaaa02", "aaaaaaaaaaaaab", "b", "bbbbbbbbbbbbbbbbbbbb",
                    "bbbbbbbbbbbbbbbbbbbb"});
  EXPECT_EQ(s.of("aaaaaaaaaaaaaaaa01"), "aaaaaaaaaaaaaaaa01");  // differs from its neighbour at 18
  EXPECT_EQ(s.of("aaaaaaaaaaaaab"), "aaaaaaaaaaaaab");          // differs at 14
  EXPECT_EQ(s.of("bbbbbbbbbbbbbbbbbbbb"), "bbbbbbbbbbbb");      // a duplicate is not a rival
  EXPECT_EQ(s.of("b"), "b");                                    // shorter than 12: all of it
  EXPECT_EQ(s.of("cccccccccccccccccc"), "cccccccccccc");        // not in the set
  EXPECT_EQ(ShortIds({}).of("0123456789abcdef"), "0123456789ab");
}

}  // namespace
}  // namespace coredumpd::cli
