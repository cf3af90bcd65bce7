// Container identification live: a real child in new user+pid+mnt+uts namespaces, placed in a
// docker-named cgroup, collected as the handshake does and identified (needs root; skips without).
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/proc/collect.h"
#include "daemon/proc/proc_dir.h"
#include "store/dump_record.h"
#include "tests/unit/container_test_util.h"

using namespace coredumpd;

// ---------------------------------------------------------------------------------------------
// live: a real child in new user+pid+mnt+uts namespaces, in a docker-named cgroup

namespace {

std::string random_hex64() {
  std::random_device rd;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  while (out.size() < 64) out += kHex[rd() % 16];
  return out;
}

bool is_fs(const std::string& path, decltype(statfs::f_type) magic) {
  struct statfs sfs{};
  return ::statfs(path.c_str(), &sfs) == 0 && sfs.f_type == magic;
}

bool write_file(const std::string& path, const std::string& data, std::string& error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  const auto n = ::write(fd, data.data(), data.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    error = path + ": " + std::strerror(saved);
    return false;
  }
  return true;
}

std::uint64_t ns_inode(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

bool read_exact(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const auto r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// The outer child (A) unshares and forks the inner child (B), pid 1 of the new pid namespace; B
// waits for EOF on `down`. Every resource is released by the destructor, on every path.
class LiveContainer {
 public:
  static constexpr std::uint32_t kBase = 100000;  // host uid/gid of the namespace's root

  LiveContainer() = default;
  LiveContainer(const LiveContainer&) = delete;
  LiveContainer& operator=(const LiveContainer&) = delete;

  ~LiveContainer() {
    if (down_w_ >= 0) ::close(down_w_);  // B reads EOF and exits; A reaps it and exits
    if (up_r_ >= 0) ::close(up_r_);
    if (outer_ > 0) {
      int status = 0;
      bool reaped = false;
      for (int i = 0; i < 500 && !reaped; ++i) {  // up to 5 s
        reaped = ::waitpid(outer_, &status, WNOHANG) == outer_;
        if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!reaped) {
        if (inner_pidfd_ >= 0) ::syscall(SYS_pidfd_send_signal, inner_pidfd_, SIGKILL, nullptr, 0);
        ::kill(outer_, SIGKILL);  // our own unreaped child: the pid cannot have been reused
        ::waitpid(outer_, &status, 0);
      }
    }
    if (inner_pidfd_ >= 0) ::close(inner_pidfd_);
    // The cgroup is empty once B is reaped; its removal may lag a moment behind.
    for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) {
      for (int i = 0; i < 200 && ::rmdir(it->c_str()) != 0 && errno == EBUSY; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Starts A and B. false with `error` (a reason to skip) on failure.
  bool start(std::string& error) {
    int up[2], down[2];
    if (::pipe2(up, O_CLOEXEC) != 0 || ::pipe2(down, O_CLOEXEC) != 0) {
      error = std::string("pipe: ") + std::strerror(errno);
      return false;
    }
    up_r_ = up[0];
    down_w_ = down[1];
    outer_ = ::fork();
    if (outer_ < 0) {
      error = std::string("fork: ") + std::strerror(errno);
      ::close(up[1]);
      ::close(down[0]);
      return false;
    }
    if (outer_ == 0) {
      ::close(up[0]);  // B must not hold the write end of `down`, or it never sees EOF
      ::close(down[1]);
      outer_main(up[1], down[0]);  // never returns
    }
    ::close(up[1]);
    ::close(down[0]);

    char tag = 0;
    int err = 0;
    if (!read_exact(up_r_, &tag, 1)) return fail(error, "outer child died before unsharing");
    if (tag == 'e') {
      read_exact(up_r_, &err, sizeof err);
      error = std::string("unshare(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWUTS): ") + std::strerror(err);
      return false;
    }
    // Root of the new user namespace is host uid/gid kBase (a privileged writer needs no
    // setgroups "deny").
    const std::string map = "0 " + std::to_string(kBase) + " 65536\n";
    const std::string proc = "/proc/" + std::to_string(outer_) + "/";
    if (!write_file(proc + "uid_map", map, error) || !write_file(proc + "gid_map", map, error)) return false;
    if (::write(down_w_, "g", 1) != 1) return fail(error, "write go");
    if (!read_exact(up_r_, &tag, 1)) return fail(error, "outer child died after the maps");
    if (tag == 'e') {
      std::int32_t step = 0;
      read_exact(up_r_, &step, sizeof step);
      read_exact(up_r_, &err, sizeof err);
      static const char* const kSteps[] = {"setresgid", "setresuid", "sethostname", "fork"};
      error = std::string(kSteps[step % 4]) + " in the new namespaces: " + std::strerror(err);
      return false;
    }
    pid_t inner = 0;
    if (tag != 'p' || !read_exact(up_r_, &inner, sizeof inner)) return fail(error, "no inner pid");
    inner_ = inner;
    // B cannot be reaped before we close `down`, so this pidfd is B's.
    inner_pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, inner_, 0));
    if (inner_pidfd_ < 0) return fail(error, std::string("pidfd_open: ") + std::strerror(errno));
    return true;
  }

  // Creates <root>/docker/<id> (and <root>/docker if need be) and moves B into it.
  bool place_in_cgroup(const std::string& root, const std::string& id, std::string& error) {
    const std::string parent = root + "/docker";
    if (::mkdir(parent.c_str(), 0755) == 0) created_dirs_.push_back(parent);
    else if (errno != EEXIST) return fail(error, parent + ": " + std::strerror(errno));
    const std::string dir = parent + "/" + id;
    if (::mkdir(dir.c_str(), 0755) != 0) return fail(error, dir + ": " + std::strerror(errno));
    created_dirs_.push_back(dir);
    return write_file(dir + "/cgroup.procs", std::to_string(inner_), error);
  }

  pid_t inner() const { return inner_; }
  int inner_pidfd() const { return inner_pidfd_; }

 private:
  static bool fail(std::string& error, const std::string& why) {
    error = why;
    return false;
  }

  [[noreturn]] static void outer_main(int up, int down) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const auto report = [up](std::int32_t step) {
      const int err = errno;
      (void)!::write(up, "e", 1);
      if (step >= 0) (void)!::write(up, &step, sizeof step);
      (void)!::write(up, &err, sizeof err);
      ::_exit(1);
    };
    if (::unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS) != 0) report(-1);
    if (::write(up, "u", 1) != 1) ::_exit(1);
    char go = 0;
    if (::read(down, &go, 1) != 1 || go != 'g') ::_exit(1);
    // Become root of the new user namespace (host kBase); drop the host's supplementary groups.
    if (::setresgid(0, 0, 0) != 0) report(0);
    (void)::setgroups(0, nullptr);
    if (::setresuid(0, 0, 0) != 0) report(1);
    if (::sethostname("ctr-live", 8) != 0) report(2);
    const pid_t inner = ::fork();
    if (inner < 0) report(3);
    if (inner == 0) {  // pid 1 of the new pid namespace
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(up);
      char c;
      while (::read(down, &c, 1) > 0) {
      }
      ::_exit(0);
    }
    (void)!::write(up, "p", 1);
    (void)!::write(up, &inner, sizeof inner);
    ::close(up);
    ::close(down);
    int status = 0;
    while (::waitpid(inner, &status, 0) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }

  pid_t outer_ = -1, inner_ = -1;
  int inner_pidfd_ = -1;
  int up_r_ = -1, down_w_ = -1;
  std::vector<std::string> created_dirs_;
};

// Runs the live scenario with the docker cgroup created under `root`.
void run_live(const std::string& root, const std::string& expect_line_prefix) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (cgroup creation, uid maps)";
  const auto id = random_hex64();
  LiveContainer ctr;
  std::string error;
  if (!ctr.start(error)) GTEST_SKIP() << "cannot create namespaces: " << error;
  if (!ctr.place_in_cgroup(root, id, error)) GTEST_SKIP() << "cgroups not writable: " << error;

  // Collect as the handshake does, through the pidfd-verified /proc directory.
  auto proc = ProcDir::open(ctr.inner_pidfd(), ctr.inner(), error);
  ASSERT_TRUE(proc) << error;
  CollectLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto facts = collect_handshake_facts(*proc, limits);
  const auto status = bytes_from_json(facts.proc.value("status", nlohmann::json()));
  ASSERT_TRUE(status);
  const auto uid_map = proc->read("uid_map", 65536, error);
  const auto gid_map = proc->read("gid_map", 65536, error);
  ASSERT_TRUE(uid_map && gid_map) << error;
  nlohmann::json host = nlohmann::json::object();
  for (const char* ns : {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"})
    host[ns] = ns_inode(std::string("/proc/self/ns/") + ns);

  EXPECT_NE(facts.cgroup.find(expect_line_prefix + "/docker/" + id), std::string::npos) << facts.cgroup;
  ContainerInputs in;
  in.cgroup = facts.cgroup;
  in.namespaces = facts.proc["namespaces"];
  in.host_namespaces = host;
  in.status = *status;
  in.uid_map = *uid_map;
  in.gid_map = *gid_map;
  in.hostname = facts.hostname;
  const auto c = identify_container(in);

  EXPECT_EQ(c.runtime, Runtime::Docker) << facts.cgroup;
  EXPECT_EQ(c.id, id);
  EXPECT_EQ(c.cgroup_path, "/docker/" + id);
  EXPECT_EQ(c.namespaces_differ.pid, true);
  EXPECT_EQ(c.namespaces_differ.mnt, true);
  EXPECT_EQ(c.namespaces_differ.user, true);
  EXPECT_EQ(c.namespaces_differ.uts, true);
  EXPECT_EQ(c.namespaces_differ.net, false);
  EXPECT_EQ(c.namespaces_differ.ipc, false);
  EXPECT_TRUE(c.in_container);
  EXPECT_EQ(c.ns_pid, 1);
  EXPECT_EQ(c.ns_uid, 0);
  EXPECT_EQ(c.ns_gid, 0);
  EXPECT_EQ(c.hostname, "ctr-live");
  EXPECT_EQ(container_key(c), "docker:" + id);
  // From our side the process is kBase, and the map says so both ways.
  EXPECT_NE(status->find("\nUid:\t100000\t100000\t100000\t100000\n"), std::string::npos) << *status;
  EXPECT_EQ(map_id_from_namespace(0, *uid_map), LiveContainer::kBase);
  EXPECT_EQ(to_json(c)["key"], "docker:" + id);
}

}  // namespace

TEST(Live, DockerNamedCgroupV1PidsHierarchy) {
  const std::string root = "/sys/fs/cgroup/pids";
  if (!is_fs(root, CGROUP_SUPER_MAGIC)) GTEST_SKIP() << root << " is not a cgroup v1 hierarchy";
  run_live(root, ":pids:");
}

TEST(Live, DockerNamedCgroupV2Hierarchy) {
  std::string root;
  if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC)) root = "/sys/fs/cgroup";
  else if (is_fs("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC)) root = "/sys/fs/cgroup/unified";
  else GTEST_SKIP() << "no cgroup v2 hierarchy mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  run_live(root, "0::");
}
