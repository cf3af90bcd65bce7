// dumpctl's delete and export (issue 24 part 3) against the real coredumpd and its query service:
// root deletes on the store beside the running daemon; a user deletes their own dump through the
// service (forked child, setresuid) and is refused root's and a set-uid program's; export's
// archive is listed and extracted by bsdtar and its core compared with `dump`; the progress line
// of `dump -o` appears under a pty and not without one.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "store/index.h"
#include "store/query_protocol.h"
#include "store/record_extras.h"
#include "tests/integration/query_client.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

constexpr uid_t kUser = 65534;  // nobody
constexpr gid_t kGroup = 65534;

struct Result {
  ExitStatus status;
  std::string out, err;
  int rc() const { return status.exited && !status.signaled() ? status.exit_code() : -1; }
};

/// Runs dumpctl as `uid` in a forked child (no supplementary groups); stdout and stderr to files
/// in `dir`, or stderr to `err_fd` when >= 0 (a pty). Bounded: 60 s.
Result run_dumpctl_as(uid_t uid, const std::vector<std::string>& args, const std::string& dir, int err_fd = -1) {
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = err_fd >= 0 ? ::dup(err_fd) : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<std::string> argv{DUMPCTL_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setenv("TMPDIR", dir.c_str(), 1);
    if (::chdir(dir.c_str()) != 0) ::_exit(124);
    if (uid != 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(kGroup, kGroup, kGroup) != 0 ||
                     ::setresuid(uid, uid, uid) != 0))
      ::_exit(125);
    ::execv(cargv[0], cargv.data());
    ::_exit(126);
  }
  ::close(out);
  ::close(err);
  Result r;
  r.status = wait_for(pid, 60s);
  r.out = read_file(out_path).value_or("");
  if (err_fd < 0) r.err = read_file(err_path).value_or("");
  return r;
}

/// Runs `argv` (paths without quotes in them) through popen(); its stdout, or std::nullopt if it failed.
std::optional<std::string> run_command(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  return ::pclose(p) == 0 ? std::optional(out) : std::nullopt;
}

std::string zstd_compress(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  EXPECT_EQ(ZSTD_isError(n), 0U);
  out.resize(n);
  return out;
}

std::string core_bytes(char seed, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i * 7 % 251));
  return s;
}

class DumpctlVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: runs dumpctl as uid " << kUser << " and seeds a root-only store";
    dir_ = std::make_unique<TempDir>();
    ::chmod(dir_->path().c_str(), 0755);
    query_ = *dir_ / "query.socket";
    store_ = *dir_ / "store";
    user_dir_ = *dir_ / "user";
    std::filesystem::create_directory(user_dir_);
    ASSERT_EQ(::chown(user_dir_.c_str(), kUser, kGroup), 0);
    std::filesystem::create_directory(store_);
    ::chmod(store_.c_str(), 0750);
    std::ofstream(*dir_ / "config.json") << "{}";
    Index index(store_, /*writable=*/true);
    mine_ = add(index, 1, kUser, kUser, true);
    mine2_ = add(index, 2, kUser, kUser, true);
    roots_ = add(index, 3, 0, 0, true);
    setuid_ = add(index, 4, kUser, 0, false);
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  std::string add(Index& index, int n, std::int64_t uid, std::int64_t euid, bool owner_may_read) {
    DumpRecord r;
    char id[33];
    std::snprintf(id, sizeof id, "%016llx%016llx", 0x7e0000000000ULL + static_cast<unsigned long long>(n), 0x1234ULL + static_cast<unsigned long long>(n));
    r.id = id;
    r.state = DumpState::Complete;
    r.timestamp_us = 1'700'000'000'000'000 + n * 1'000'000;
    r.pid = 2000 + n;
    r.uid = uid;
    r.euid = euid;
    r.gid = r.egid = uid == 0 ? 0 : kGroup;
    r.comm = "prog" + std::to_string(n);
    r.exe = "/usr/bin/true";  // exists: export archives it
    r.argv = {r.exe};
    r.signal = 11;
    r.extra = {{extras::kOwnerMayRead, owner_may_read}};
    cores_[r.id] = core_bytes(static_cast<char>('a' + n), 200'000);
    const std::string z = zstd_compress(cores_[r.id]);
    r.compression = kCompressionZstd;
    r.path = r.id + ".zst";
    r.core_size = cores_[r.id].size();
    r.stored_size = z.size();
    std::ofstream(store_ + "/" + r.path, std::ios::binary) << z;
    index.insert(r);
    return r.id;
  }

  void start_daemon() {
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, *dir_ / "kernel.socket", store_, *dir_ / "log",
                                       std::vector<std::string>{"--allow-unverified-peers", "--config",
                                                                *dir_ / "config.json", "--query-socket", query_});
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(query_); }, 10s)) << "no query socket";
  }

  bool row(const std::string& id) { return Index(store_, false).get(id).has_value(); }
  bool file(const std::string& id) { return std::filesystem::exists(store_ + "/" + id + ".zst"); }

  Result as_user(std::vector<std::string> args) {
    args.insert(args.begin(), {"--query-socket", query_});
    return run_dumpctl_as(kUser, args, user_dir_);
  }
  Result as_root(std::vector<std::string> args) {
    args.insert(args.begin(), {"--store", store_});
    return run_dumpctl_as(0, args, user_dir_);
  }

  /// The reply to `line` sent by uid `uid` (a forked child connects as that user).
  nlohmann::json ask_as(uid_t uid, const std::string& line) {
    const std::string reply_path = user_dir_ + "/reply";
    std::filesystem::remove(reply_path);  // the child may be another user: it creates a new one
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::setresgid(kGroup, kGroup, kGroup) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(125);
      const UniqueFd fd = connect_query(query_);
      std::ofstream(reply_path) << ask(fd.get(), line).dump();
      ::_exit(0);
    }
    EXPECT_TRUE(wait_for(pid, 30s).exited);
    return nlohmann::json::parse(read_file(reply_path).value_or("null"));
  }

  std::unique_ptr<TempDir> dir_;
  std::string query_, store_, user_dir_;
  std::unique_ptr<Daemon> daemon_;
  std::map<std::string, std::string> cores_;
  std::string mine_, mine2_, roots_, setuid_;
};

TEST_F(DumpctlVerbs, RootDeletesOnTheStoreBesideTheDaemon) {
  start_daemon();
  const Result dry = as_root({"delete", "--dry-run", mine_});
  ASSERT_EQ(dry.rc(), 0) << dry.err;
  EXPECT_NE(dry.out.find("Would delete " + mine_), std::string::npos) << dry.out;
  EXPECT_TRUE(row(mine_) && file(mine_)) << "a dry run touches nothing";

  const Result r = as_root({"delete", mine_, roots_});
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_NE(r.out.find("Deleted " + mine_), std::string::npos) << r.out;
  for (const auto& id : {mine_, roots_}) EXPECT_FALSE(row(id) || file(id)) << id;
  for (const auto& id : {mine2_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << "others intact: " << id;

  // The daemon's view agrees: its list (root through the service) no longer has them.
  const Result list = run_dumpctl_as(0, {"--query-socket", query_, "list", "--json=short"}, user_dir_);
  ASSERT_EQ(list.rc(), 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out).size(), 2U) << list.out;

  // A row whose core file is already missing: the row goes, and the output says so.
  std::filesystem::remove(store_ + "/" + mine2_ + ".zst");
  const Result missing = as_root({"delete", mine2_});
  ASSERT_EQ(missing.rc(), 0) << missing.err;
  EXPECT_NE(missing.out.find("already missing"), std::string::npos) << missing.out;
  EXPECT_FALSE(row(mine2_));
  const Result again = as_root({"delete", mine2_});
  EXPECT_EQ(again.rc(), 1) << "nothing matches any more";
}

TEST_F(DumpctlVerbs, DeleteTakesEveryMatchAndRefusesAnEmptySelection) {
  // No MATCH, -S, -U, -1 or -n: "delete" alone would mean every dump; refused, nothing touched.
  const Result bare = as_root({"delete"});
  EXPECT_EQ(bare.rc(), 1);
  EXPECT_NE(bare.err.find("--all"), std::string::npos) << bare.err;
  for (const auto& id : {mine_, mine2_, roots_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << id;
  const Result all = as_root({"delete", "--all", "--dry-run"});
  ASSERT_EQ(all.rc(), 0) << all.err;
  for (const auto& id : {mine_, mine2_, roots_, setuid_})
    EXPECT_NE(all.out.find("Would delete " + id), std::string::npos) << all.out;

  // coredumpctl's matches: two COMMs (the same field: ORed), FIELD=VALUE with them (ANDed).
  const Result none = as_root({"delete", "prog1", "prog3", "COREDUMP_UID=4242"});
  EXPECT_EQ(none.rc(), 1);
  EXPECT_NE(none.err.find("No match found."), std::string::npos) << none.err;
  const Result two = as_root({"delete", "prog1", "prog3"});
  ASSERT_EQ(two.rc(), 0) << two.err;
  for (const auto& id : {mine_, roots_}) EXPECT_FALSE(row(id) || file(id)) << id;
  for (const auto& id : {mine2_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << id;
  // -1: the newest of what is left (setuid_, the 4th), by a time filter and no MATCH.
  const Result newest = as_root({"delete", "-1"});
  ASSERT_EQ(newest.rc(), 0) << newest.err;
  EXPECT_FALSE(row(setuid_));
  EXPECT_TRUE(row(mine2_));
}

TEST_F(DumpctlVerbs, UserDeletesTheirOwnThroughTheService) {
  start_daemon();
  const Result r = as_user({"delete", mine_});
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_NE(r.out.find("Deleted " + mine_), std::string::npos) << r.out;
  EXPECT_FALSE(row(mine_) || file(mine_)) << "the daemon removed the row and the core";
  for (const auto& id : {mine2_, roots_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << id;
  const nlohmann::json status = ask_as(0, R"({"op":"status"})" "\n");
  EXPECT_EQ(status["status"]["counters"]["deleted"], 1) << status.dump();

  // Root's dump and the set-uid program's: not the user's to see, so not to delete either; the
  // service answers as for a dump that does not exist, and nothing is touched.
  for (const auto& id : {roots_, setuid_}) {
    nlohmann::json reply = ask_as(kUser, R"({"op":"delete","id":")" + id + "\"}\n");
    EXPECT_EQ(reply["ok"], false) << reply.dump();
    EXPECT_EQ(reply["code"], "not_found") << reply.dump();
    EXPECT_TRUE(row(id) && file(id)) << id;
    const Result cli = as_user({"delete", id});
    EXPECT_EQ(cli.rc(), 1);
    EXPECT_NE(cli.err.find("No match found."), std::string::npos) << cli.err;
  }
  const Result direct = run_dumpctl_as(kUser, {"--store", store_, "delete", mine2_}, user_dir_);
  EXPECT_EQ(direct.rc(), 1) << "the store is root's";
  EXPECT_TRUE(row(mine2_) && file(mine2_));
}

// Short ids through the service: the prefix is resolved by the daemon's scan (COREDUMPD_ID
// matches by prefix) among the dumps the user may see, never among root's.
TEST_F(DumpctlVerbs, UserInfoTakesShortIdsThroughTheService) {
  start_daemon();
  const Result r = as_user({"info", "--json=short", mine_.substr(0, 16)});
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("id"), mine_) << r.out;
  const Result two = as_user({"info", "--json=short", mine_.substr(0, 16), mine2_.substr(0, 16)});
  ASSERT_EQ(two.rc(), 0) << two.err;
  EXPECT_NE(two.out.find(mine2_), std::string::npos) << two.out;
  const Result theirs = as_user({"info", roots_.substr(0, 16)});
  EXPECT_EQ(theirs.rc(), 1) << "root's dump is not the user's: " << theirs.out;
  const Result ambiguous = as_user({"info", mine_.substr(0, 15)});  // mine_ and mine2_
  EXPECT_EQ(ambiguous.rc(), 1);
  EXPECT_NE(ambiguous.err.find("ambiguous"), std::string::npos) << ambiguous.err;
}

TEST_F(DumpctlVerbs, ExportArchiveHoldsTheCoreTheExecutableAndTheRecord) {
  if (::system("command -v bsdtar >/dev/null") != 0) GTEST_SKIP() << "bsdtar (libarchive-tools) is not installed";
  const Result r = as_root({"export", mine_, "-o", user_dir_ + "/bug.tar.zst"});
  ASSERT_EQ(r.rc(), 0) << r.err;
  const std::string prefix = "coredump-" + mine_.substr(0, 12);
  const std::string listing = run_command({"bsdtar", "-tf", user_dir_ + "/bug.tar.zst"}).value_or("");
  for (const auto& name : {"/core", "/record.json", "/files.json", "/README", "/usr/bin/true"})
    EXPECT_NE(listing.find(prefix + name), std::string::npos) << name << " in\n" << listing;

  const std::string x = user_dir_ + "/x";
  std::filesystem::create_directory(x);
  ASSERT_TRUE(run_command({"bsdtar", "-xf", user_dir_ + "/bug.tar.zst", "-C", x}));
  const Result dump = as_root({"dump", mine_, "-o", user_dir_ + "/dumped"});
  ASSERT_EQ(dump.rc(), 0) << dump.err;
  EXPECT_EQ(read_file(x + "/" + prefix + "/core"), read_file(user_dir_ + "/dumped"));
  EXPECT_EQ(read_file(x + "/" + prefix + "/core"), cores_[mine_]);
  EXPECT_EQ(read_file(x + "/" + prefix + "/usr/bin/true"), read_file("/usr/bin/true"));
  EXPECT_EQ(nlohmann::json::parse(*read_file(x + "/" + prefix + "/record.json")).at("record").at("id"), mine_);
  EXPECT_NE(read_file(x + "/" + prefix + "/README")->find("set sysroot ."), std::string::npos);

  // Matches as dump takes them: the newest of several (prog1 and prog2 by COMM: mine2_), said so.
  const Result newest = as_root({"export", "prog1", "prog2", "-o", user_dir_ + "/newest.tar.zst"});
  ASSERT_EQ(newest.rc(), 0) << newest.err;
  EXPECT_NE(newest.err.find("More than one entry matches, ignoring rest."), std::string::npos) << newest.err;
  const std::string listing2 = run_command({"bsdtar", "-tf", user_dir_ + "/newest.tar.zst"}).value_or("");
  EXPECT_NE(listing2.find("coredump-" + mine2_.substr(0, 12) + "/core"), std::string::npos) << listing2;
  const Result quiet = as_root({"-q", "export", "prog1", "prog2", "-o", user_dir_ + "/q.tar.zst"});
  ASSERT_EQ(quiet.rc(), 0) << quiet.err;
  EXPECT_EQ(quiet.err, "") << "-q: no warning, no summary";
}

TEST_F(DumpctlVerbs, ExportAddsTheLibrariesOfARealCore) {
  if (::system("command -v gcore >/dev/null && command -v bsdtar >/dev/null") != 0)
    GTEST_SKIP() << "gcore (gdb) or bsdtar is not installed";
  // A real core with an NT_FILE note: gcore of a sleeping process.
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(200ms);
  const std::string gcore_out = user_dir_ + "/gcore";
  const bool made = run_command({"gcore", "-o", gcore_out, std::to_string(child)}).has_value();
  ::kill(child, SIGKILL);
  wait_for(child, 10s);
  ASSERT_TRUE(made) << "gcore failed";
  const std::string core = read_file(gcore_out + "." + std::to_string(child)).value_or("");
  ASSERT_FALSE(core.empty());
  {
    Index index(store_, true);
    DumpRecord d = *index.get(mine_);
    const std::string z = zstd_compress(core);
    std::ofstream(store_ + "/" + d.path, std::ios::binary | std::ios::trunc) << z;
    d.exe = "/bin/sleep";
    d.core_size = core.size();
    d.stored_size = z.size();
    index.update(d);
  }
  const Result r = as_root({"export", mine_, "-o", user_dir_ + "/real.tar.zst"});
  ASSERT_EQ(r.rc(), 0) << r.err;
  const std::string listing = run_command({"bsdtar", "-tf", user_dir_ + "/real.tar.zst"}).value_or("");
  EXPECT_NE(listing.find("/bin/sleep"), std::string::npos) << listing;
  EXPECT_NE(listing.find("/libc.so.6"), std::string::npos) << "libc, from NT_FILE: " << listing;
  EXPECT_NE(listing.find("/ld-linux-x86-64.so.2"), std::string::npos) << listing;
  const auto archived = run_command({"bsdtar", "-xOf", user_dir_ + "/real.tar.zst", "coredump-" + mine_.substr(0, 12) + "/core"});
  EXPECT_TRUE(archived == core) << "the core, byte for byte";
}

TEST_F(DumpctlVerbs, ExportListsMissingFilesAndWorksForTheUser) {
  {
    Index index(store_, true);
    DumpRecord d = *index.get(mine_);
    d.exe = "/nonexistent/gone (deleted)";
    index.update(d);
  }
  start_daemon();
  const Result r = as_user({"export", mine_, "-o", user_dir_ + "/mine.tar.zst"});
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_NE(r.err.find("1 missing"), std::string::npos) << r.err;
  const std::string prefix = "coredump-" + mine_.substr(0, 12);
  const auto files = run_command({"tar", "--zstd", "-xOf", user_dir_ + "/mine.tar.zst", prefix + "/files.json"});
  ASSERT_TRUE(files);
  const auto j = nlohmann::json::parse(*files);
  ASSERT_EQ(j.at("files").size(), 1U) << *files;
  EXPECT_EQ(j["files"][0]["path"], "/nonexistent/gone");
  EXPECT_EQ(j["files"][0]["archived"], false);
  const auto core = run_command({"tar", "--zstd", "-xOf", user_dir_ + "/mine.tar.zst", prefix + "/core"});
  EXPECT_EQ(core, cores_[mine_]);
  const Result other = as_user({"export", roots_, "-o", user_dir_ + "/stolen.tar.zst"});
  EXPECT_EQ(other.rc(), 1);
  EXPECT_FALSE(std::filesystem::exists(user_dir_ + "/stolen.tar.zst"));
}

/// A dump of `size` zero bytes: one zstd frame of 1 MiB zeros, repeated (concatenated frames).
std::string add_big(const std::string& store, std::uint64_t mib) {
  Index index(store, true);
  DumpRecord r;
  r.id = "00000000000000000000000000b19b19";
  r.state = DumpState::Complete;
  r.timestamp_us = 1'700'000'100'000'000;
  r.pid = 77;
  r.uid = r.euid = 0;
  r.comm = "big";
  r.compression = kCompressionZstd;
  r.path = r.id + ".zst";
  const std::string frame = zstd_compress(std::string(1 << 20, '\0'));
  std::ofstream f(store + "/" + r.path, std::ios::binary);
  for (std::uint64_t i = 0; i < mib; ++i) f << frame;
  r.core_size = mib << 20;
  r.stored_size = frame.size() * mib;
  index.insert(r);
  return r.id;
}

TEST_F(DumpctlVerbs, DumpShowsProgressOnATerminalOnly) {
  const std::string big = add_big(store_, 4096);  // 4 GiB of holes: long enough for several redraws
  /// dumpctl `args` as root with standard error on a new pty; what the terminal got.
  const auto on_pty = [&](const std::vector<std::string>& args) {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    EXPECT_GE(master, 0);
    EXPECT_EQ(::grantpt(master), 0);
    EXPECT_EQ(::unlockpt(master), 0);
    const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    EXPECT_GE(slave, 0);
    const Result r = run_dumpctl_as(0, args, user_dir_, slave);
    ::close(slave);
    EXPECT_EQ(r.rc(), 0);
    std::string tty;
    char buf[4096];
    for (;;) {
      pollfd p{master, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) break;
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;
      tty.append(buf, static_cast<std::size_t>(n));
    }
    ::close(master);
    std::filesystem::remove(user_dir_ + "/big");
    return tty;
  };
  const std::string tty = on_pty({"--store", store_, "dump", big, "-o", user_dir_ + "/big"});
  EXPECT_NE(tty.find("\rWriting "), std::string::npos) << tty;
  EXPECT_NE(tty.find(" / 4.0 GiB"), std::string::npos) << tty;
  EXPECT_NE(tty.find("/s"), std::string::npos) << tty;
  EXPECT_TRUE(tty.ends_with("\r\x1b[K")) << "the line is cleared at the end: " << tty;
  std::filesystem::remove(user_dir_ + "/big");

  // -q (global: before or after the verb) turns the line off.
  const std::string quiet = on_pty({"--store", store_, "dump", big, "-q", "-o", user_dir_ + "/big"});
  EXPECT_EQ(quiet.find("Writing "), std::string::npos) << quiet;

  const Result plain = as_root({"dump", big, "-o", user_dir_ + "/big"});
  ASSERT_EQ(plain.rc(), 0) << plain.err;
  EXPECT_EQ(plain.err, "") << "no progress without a terminal";
  std::filesystem::remove(user_dir_ + "/big");
}

}  // namespace
