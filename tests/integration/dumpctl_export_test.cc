// dumpctl export (issue 24 part 3): the archive listed and extracted by bsdtar and its core compared
// with `dump`, the libraries of a real gcore core from its NT_FILE note, missing files, the newest of
// several matches; the progress line of `dump -o` under a pty, not without one, not with -q.
#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include "tests/integration/dumpctl_verbs_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
using namespace coredumpd::test::verbs;

namespace {

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

// An archive that does not fit (a full disk), or a read-only directory: an error
// naming the reason, exit 1, no archive and no temporary file left, a file already at -o untouched.
TEST_F(DumpctlVerbs, ExportToAFullDiskLeavesNothingBehind) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const std::string small = user_dir_ + "/small";
  std::filesystem::create_directory(small);
  ASSERT_EQ(::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=16k"), 0) << std::strerror(errno);
  const std::string target = small + "/bug.tar.zst";
  std::ofstream(target) << "an older archive";
  const Result full = as_root({"export", mine_, "-o", target});
  EXPECT_EQ(full.rc(), 1) << full.err;
  EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
  EXPECT_EQ(read_file(target), "an older archive");
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(small)) left.push_back(e.path().filename());
  EXPECT_EQ(left, std::vector<std::string>{"bug.tar.zst"});
  ::umount2(small.c_str(), MNT_DETACH);

  ASSERT_EQ(::mount("tmpfs", small.c_str(), "tmpfs", MS_RDONLY, "size=16k"), 0) << std::strerror(errno);
  const Result read_only = as_root({"export", mine_, "-o", target});
  EXPECT_EQ(read_only.rc(), 1) << read_only.err;
  EXPECT_NE(read_only.err.find("Read-only file system"), std::string::npos) << read_only.err;
  EXPECT_TRUE(std::filesystem::is_empty(small));
  ::umount2(small.c_str(), MNT_DETACH);
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
