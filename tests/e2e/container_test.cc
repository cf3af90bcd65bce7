// Real-kernel tests of per-container policy: the test builds "containers" itself — user, pid,
// mount and UTS namespaces (unshare) whose root is a host uid, each in a cgroup named the way
// docker, podman and a Kubernetes pod (kubelet's systemd driver, containerd) name theirs — and
// crashes the crasher inside them. It checks rule matching,
// reject (no core, no WCOREDUMP), a rule's quota, a rule's rate limit, and that both the host's and
// the container's view of the pid and uid are recorded.
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fs = std::filesystem;

namespace {

constexpr uid_t kHostUid = 61234;  // the containers' root (uid 0 inside) on the host
constexpr const char* kUnshare = "/usr/bin/unshare";

// The cgroup v2 hierarchy: the v2 line ("0::/path") is the first one identify_container() reads.
// /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a hybrid one; "" if neither.
std::string cgroup2_root() {
  for (const char* p : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs st {};
    if (::statfs(p, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC) return p;
  }
  return "";
}

// One line of the reaper's report (see tests/programs/reaper.cc).
struct CrashRun {
  int child_pid = 0, uid = -1, signaled = 0, signal = 0, core_dumped = 0, exit = 0;
};

std::vector<CrashRun> parse_report(const std::string& text) {
  std::vector<CrashRun> runs;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    CrashRun r;
    if (std::sscanf(line.c_str(), "child_pid=%d uid=%d signaled=%d signal=%d core_dumped=%d exit=%d", &r.child_pid,
                    &r.uid, &r.signaled, &r.signal, &r.core_dumped, &r.exit) == 6)
      runs.push_back(r);
  }
  return runs;
}

// A fake container: a cgroup named like `runtime`'s and fresh namespaces for every run.
class FakeContainer {
 public:
  // `scope` is the cgroup directory ("docker-<id>.scope", or a path of nested ones), created under
  // `parent`.
  FakeContainer(const std::string& parent, std::string runtime, std::string id, const std::string& scope)
      : runtime_(std::move(runtime)), id_(std::move(id)), parent_(parent), dir_(parent + "/" + scope) {
    fs::create_directories(dir_);
  }
  ~FakeContainer() {
    // The cgroup empties when the last process has been reaped; give the kernel a moment.
    wait_until([&] { return ::rmdir(dir_.c_str()) == 0 || errno == ENOENT; }, 5s);
    for (fs::path p = fs::path(dir_).parent_path(); p.string().size() > parent_.size(); p = p.parent_path())
      ::rmdir(p.c_str());
  }
  FakeContainer(const FakeContainer&) = delete;
  FakeContainer& operator=(const FakeContainer&) = delete;

  const std::string& runtime() const { return runtime_; }
  const std::string& id() const { return id_; }
  const std::string& hostname() const { return runtime_; }  ///< set in its UTS namespace

  // Runs the crasher `repeat` times, one after the other, as a child of the reaper, which is the
  // init of new user (root = kHostUid), pid, mount and UTS namespaces in this cgroup. Returns the
  // reaper's report, one CrashRun per crash; empty if the container could not be started (the output
  // is then in `diag`). Bounded: 120 s, then the whole tree is killed.
  std::vector<CrashRun> crash(int repeat, std::string& diag) {
    char tmpl[] = "/tmp/cdt-container-XXXXXX";
    const int out = ::mkstemp(tmpl);
    if (out < 0) throw std::runtime_error("mkstemp failed");
    const std::string procs = dir_ + "/cgroup.procs";
    const std::vector<std::string> argv{kUnshare, "--user", "--map-root-user", "--pid", "--fork", "--kill-child",
                                        "--mount", "--uts", "--", REAPER_BIN, "--hostname", hostname(), "--repeat",
                                        std::to_string(repeat), "--", CRASHER_BIN, "--mode", "segv"};
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Only async-signal-safe calls between fork and exec.
      const int cg = ::open(procs.c_str(), O_WRONLY);
      if (cg < 0 || ::write(cg, "0", 1) != 1) ::_exit(125);  // "0": this process
      ::close(cg);
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
      if (::setgroups(0, nullptr) != 0 || ::setgid(kHostUid) != 0 || ::setuid(kHostUid) != 0) ::_exit(126);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out);
    const auto st = wait_for(pid, 120s);
    diag = read_file(tmpl).value_or("");
    ::unlink(tmpl);
    if (!st.exited || st.exit_code() != 0) {
      diag = "unshare exit status " + std::to_string(st.raw) + ": " + diag;
      return {};
    }
    return parse_report(diag);
  }

 private:
  std::string runtime_, id_, parent_, dir_;
};

// Cgroups left by a test process that died before its TearDown (coredumpd-e2e-<pid> whose pid is
// gone): their leaves, then them.
void remove_stale_cgroups(const std::string& root) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename();
    if (name.rfind("coredumpd-e2e-", 0) != 0 || !e.is_directory()) continue;
    const long pid = std::strtol(name.c_str() + 14, nullptr, 10);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    for (const auto& leaf : fs::directory_iterator(e.path(), ec))
      if (leaf.is_directory()) ::rmdir(leaf.path().c_str());
    ::rmdir(e.path().c_str());
  }
}

std::string hex_id(char c) { return std::string(64, c); }

class Containers : public RealKernel {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_REAL_KERNEL("container test");
    if (::access(kUnshare, X_OK) != 0) GTEST_SKIP() << kUnshare << " (util-linux) is missing";
    root_ = cgroup2_root();
    if (root_.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified";
    remove_stale_cgroups(root_);
    parent_ = root_ + "/coredumpd-e2e-" + std::to_string(::getpid());
    std::error_code ec;
    fs::create_directories(parent_, ec);
    if (ec) GTEST_SKIP() << "cannot create a cgroup under " << root_ << ": " << ec.message();
    docker_ = std::make_unique<FakeContainer>(parent_, "docker", hex_id('d'), "docker-" + hex_id('d') + ".scope");
    podman_ = std::make_unique<FakeContainer>(parent_, "podman", hex_id('b'), "libpod-" + hex_id('b') + ".scope");
  }

  void TearDown() override {
    RealKernel::TearDown();
    docker_.reset();
    podman_.reset();
    if (!parent_.empty()) ::rmdir(parent_.c_str());
  }

  // Crashes `repeat` times in `c`; a failure to run them all is a test failure, with the output.
  std::vector<CrashRun> crash_in(FakeContainer& c, int repeat = 1) {
    std::string diag;
    auto runs = c.crash(repeat, diag);
    EXPECT_EQ(runs.size(), static_cast<std::size_t>(repeat)) << diag;
    return runs;
  }

  // The finished dumps (state not in_progress) of container `c`, oldest first, once there are
  // `count` of them (bounded: 30 s); fewer if they never came.
  std::vector<DumpRecord> dumps_of(const FakeContainer& c, std::size_t count) {
    std::vector<DumpRecord> found;
    wait_until(
        [&] {
          found.clear();
          try {
            Index index(store_, false);
            for (auto& r : index.list()) {
              const auto& ct = r.extra.value("container", nlohmann::json::object());
              if (ct.value("id", "") == c.id() && r.state != DumpState::InProgress) found.push_back(r);
            }
          } catch (const IndexError&) {
          }
          return found.size() >= count;
        },
        30s);
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.timestamp_us < b.timestamp_us; });
    return found;
  }

  // The row of dump `id` as it is now.
  std::optional<DumpRecord> row(const std::string& id) {
    Index index(store_, false);
    for (auto& r : index.list())
      if (r.id == id) return r;
    return std::nullopt;
  }

  std::string root_, parent_;
  std::unique_ptr<FakeContainer> docker_, podman_;
};

const char* kRuleConfig = R"({
  "rules": [
    {"name": "docker-apps", "match": {"runtime": "docker"}},
    {"name": "podman-rejected", "match": {"runtime": "podman"}, "action": "reject"}
  ]})";

TEST_F(Containers, RulesMatchTheContainerAndBothViewsOfIdsAreRecorded) {
  start_daemon(kRuleConfig);
  const auto runs = crash_in(*docker_);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].signal, SIGSEGV);
  EXPECT_EQ(runs[0].core_dumped, 1) << "the kernel did not report WCOREDUMP to the container's init";
  EXPECT_EQ(runs[0].uid, 0) << "root inside the container";
  EXPECT_GT(runs[0].child_pid, 1) << "the crasher is a child of the namespace's init, not the init";

  const auto dumps = dumps_of(*docker_, 1);
  ASSERT_EQ(dumps.size(), 1u);
  const DumpRecord& r = dumps[0];
  EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
  expect_released_promptly(r);
  EXPECT_EQ(r.extra.value("rule", "?"), "docker-apps");
  const auto& ct = r.extra["container"];
  EXPECT_EQ(ct.value("runtime", ""), "docker");
  EXPECT_EQ(ct.value("key", ""), "docker:" + docker_->id());
  EXPECT_EQ(ct.value("in_container", false), true);
  EXPECT_EQ(r.hostname, "docker");
  // Host and container views of the pid and uid.
  EXPECT_EQ(ct["ns_pid"], runs[0].child_pid);
  EXPECT_NE(r.pid, runs[0].child_pid);
  EXPECT_EQ(r.crashing_tid_ns, runs[0].child_pid) << "NT_PRSTATUS pr_pid is the pid in the container";
  EXPECT_EQ(r.uid, static_cast<std::int64_t>(kHostUid));
  EXPECT_EQ(r.euid, static_cast<std::int64_t>(kHostUid));
  EXPECT_EQ(ct["ns_uid"], 0);
  EXPECT_EQ(ct["ns_gid"], 0);
  ASSERT_FALSE(r.path.empty());
  EXPECT_TRUE(fs::exists(store_ + "/" + r.path));

  // dumpctl info shows both views.
  const auto [ist, info] = run_capture({DUMPCTL_BIN, "--store", store_, "info", r.id});
  EXPECT_EQ(ist.exit_code(), 0) << info;
  EXPECT_NE(info.find("PID: " + std::to_string(r.pid) + " (crasher)\n"), std::string::npos) << info;
  EXPECT_NE(info.find("Namespace IDs: pid " + std::to_string(runs[0].child_pid) + ", uid 0, gid 0"), std::string::npos)
      << info;
  EXPECT_NE(info.find("Container: docker:" + docker_->id()), std::string::npos) << info;
  EXPECT_NE(info.find("Rule: docker-apps"), std::string::npos) << info;
}

TEST_F(Containers, RejectRuleStoresNoCoreAndTheKernelDumpsNothing) {
  start_daemon(kRuleConfig);
  const auto runs = crash_in(*podman_);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].signaled, 1);
  EXPECT_EQ(runs[0].signal, SIGSEGV);
  EXPECT_EQ(runs[0].core_dumped, 0) << "REJECT: the container's init must not see WCOREDUMP";

  const auto dumps = dumps_of(*podman_, 1);
  ASSERT_EQ(dumps.size(), 1u);
  const DumpRecord& r = dumps[0];
  EXPECT_EQ(r.state, DumpState::Rejected);
  EXPECT_EQ(r.reason, "policy action reject");
  EXPECT_EQ(r.extra.value("rule", "?"), "podman-rejected");
  EXPECT_EQ(r.extra["container"].value("runtime", ""), "podman");
  EXPECT_EQ(r.extra["container"]["ns_pid"], runs[0].child_pid);
  EXPECT_TRUE(r.path.empty());
  EXPECT_EQ(r.core_size, 0u);
  EXPECT_FALSE(fs::exists(store_ + "/" + r.id + ".zst"));
}

TEST_F(Containers, RuleQuotaRemovesThatContainersOldestCoreOnly) {
  // Any core is larger than 4 KiB: each new docker dump pushes the previous one out.
  start_daemon(R"({"rules": [
    {"name": "docker-apps", "match": {"runtime": "docker"}, "max_use": 4096},
    {"name": "podman-apps", "match": {"runtime": "podman"}}]})");
  ASSERT_EQ(crash_in(*podman_).size(), 1u);
  ASSERT_EQ(dumps_of(*podman_, 1).size(), 1u);
  ASSERT_EQ(crash_in(*docker_).size(), 1u);
  const auto first = dumps_of(*docker_, 1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].state, DumpState::Complete) << first[0].reason;
  expect_released_promptly(first[0]);
  EXPECT_FALSE(first[0].path.empty()) << "the dump just written is never the victim";
  ASSERT_EQ(crash_in(*docker_).size(), 1u);
  const auto both = dumps_of(*docker_, 2);
  ASSERT_EQ(both.size(), 2u);
  ASSERT_EQ(both[0].id, first[0].id);

  std::optional<DumpRecord> oldest;
  EXPECT_TRUE(wait_until([&] { return (oldest = row(first[0].id)) && oldest->path.empty(); }, 30s))
      << "the oldest docker core was not vacuumed";
  ASSERT_TRUE(oldest);
  EXPECT_EQ(oldest->extra["vacuumed"].value("reason", ""), "rule_quota");
  EXPECT_FALSE(fs::exists(store_ + "/" + first[0].id + ".zst"));
  const auto newest = row(both[1].id);
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->state, DumpState::Complete);
  EXPECT_TRUE(fs::exists(store_ + "/" + newest->path));
  const auto podman = dumps_of(*podman_, 1);
  ASSERT_EQ(podman.size(), 1u);
  EXPECT_EQ(podman[0].state, DumpState::Complete);
  ASSERT_FALSE(podman[0].path.empty()) << "another rule's core went";
  EXPECT_TRUE(fs::exists(store_ + "/" + podman[0].path));
}

TEST_F(Containers, RateLimitTurnsOneContainersFloodIntoMetadataOnly) {
  // One rule for both containers: the limit is counted per container (and executable).
  start_daemon(R"({"rules": [
    {"name": "containers", "match": {"cgroup": "/coredumpd-e2e-*"},
     "rate_limit": {"burst": 2, "interval_s": 3600}}]})");
  constexpr int kFlood = 5;
  const auto runs = crash_in(*docker_, kFlood);
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kFlood));
  const auto flood = dumps_of(*docker_, kFlood);
  ASSERT_EQ(flood.size(), static_cast<std::size_t>(kFlood));
  for (int i = 0; i < kFlood; ++i) {
    const DumpRecord& r = flood[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.extra.value("rule", "?"), "containers") << r.extra["container"].dump();
    EXPECT_EQ(r.extra["container"]["ns_pid"], runs[static_cast<std::size_t>(i)].child_pid);
    if (i < 2) {
      EXPECT_EQ(r.state, DumpState::Complete) << i << ": " << r.reason;
      expect_released_promptly(r);
      EXPECT_FALSE(r.path.empty());
      continue;
    }
    EXPECT_EQ(r.state, DumpState::MetadataOnly) << i;
    EXPECT_TRUE(r.path.empty());
    EXPECT_NE(r.reason.find("rate limit"), std::string::npos) << r.reason;
    ASSERT_TRUE(r.extra.contains("rate_limited")) << i;
    const auto& rl = r.extra["rate_limited"];
    EXPECT_EQ(rl.value("suppressed", 0), i - 1) << rl.dump();
    EXPECT_EQ(rl.value("burst", 0), 2);
    EXPECT_EQ(rl.value("container", ""), "docker:" + docker_->id());
  }
  // The other container under the same rule is not held back by the flood.
  ASSERT_EQ(crash_in(*podman_).size(), 1u);
  const auto podman = dumps_of(*podman_, 1);
  ASSERT_EQ(podman.size(), 1u);
  EXPECT_EQ(podman[0].state, DumpState::Complete) << podman[0].reason;
  EXPECT_FALSE(podman[0].path.empty());
  EXPECT_NE(daemon_->log().find("rate limit"), std::string::npos);
}

// A pod's container under kubelet's systemd cgroup driver with containerd: the crash is told apart
// by the pod (runtime "kubernetes", key "kubernetes:<pod uid>"), and a rule naming that pod applies.
TEST_F(Containers, KubernetesPodContainerIsMatchedByItsPodUid) {
  const std::string pod_uid = "0b8e2b6a-3c1d-4e5f-9a7b-1c2d3e4f5a6b";
  std::string slice_uid = pod_uid;
  std::replace(slice_uid.begin(), slice_uid.end(), '-', '_');  // kubelet's systemd driver escapes '-'
  FakeContainer pod(parent_, "kubernetes", hex_id('e'),
                    "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + slice_uid +
                        ".slice/cri-containerd-" + hex_id('e') + ".scope");
  start_daemon(R"({"rules": [
    {"name": "that-pod", "match": {"container": "kubernetes:)" + pod_uid + R"("}, "action": "metadata-only"},
    {"name": "docker-apps", "match": {"runtime": "docker"}}]})");
  const auto runs = crash_in(pod);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].signal, SIGSEGV);
  const auto dumps = dumps_of(pod, 1);
  ASSERT_EQ(dumps.size(), 1u);
  const DumpRecord& r = dumps[0];
  EXPECT_EQ(r.state, DumpState::MetadataOnly) << r.reason;
  EXPECT_EQ(r.extra.value("rule", "?"), "that-pod");
  const auto& ct = r.extra["container"];
  EXPECT_EQ(ct.value("runtime", ""), "kubernetes");
  EXPECT_EQ(ct.value("engine", ""), "containerd");
  EXPECT_EQ(ct.value("pod_uid", ""), pod_uid);
  EXPECT_EQ(ct.value("key", ""), "kubernetes:" + pod_uid);
  EXPECT_EQ(ct["ns_pid"], runs[0].child_pid);
  EXPECT_EQ(ct["ns_uid"], 0);
  EXPECT_EQ(r.uid, static_cast<std::int64_t>(kHostUid));
  EXPECT_TRUE(r.path.empty());
}

// A namespaced crash that no runtime's cgroup names (a plain unshare): only its namespaces tell it
// apart. PID 1's /proc/1/ns may be unreadable (it is on some hosts, even as root); the reference
// then comes from the kernel's fixed initial-namespace inodes (host_namespaces.h), so the crash is
// still told from the host's and a rule on "namespaces" matches it.
TEST_F(Containers, AnUnrecognisedNamespacedCrashIsDetectedByItsNamespaces) {
  FakeContainer plain(parent_, "plain", "", "plain-unshare");
  start_daemon(R"({"rules": [
    {"name": "namespaced", "match": {"namespaces": {"pid": "non-host", "mnt": "non-host"}}, "action": "metadata-only"}]})");
  const auto runs = crash_in(plain);
  ASSERT_EQ(runs.size(), 1u);
  std::vector<DumpRecord> found;
  ASSERT_TRUE(wait_until(
      [&] {
        found.clear();
        Index index(store_, false);
        for (auto& r : index.list())
          if (r.hostname == "plain" && r.state != DumpState::InProgress) found.push_back(r);
        return !found.empty();
      },
      30s));
  const DumpRecord& r = found[0];
  EXPECT_EQ(r.extra.value("rule", "?"), "namespaced") << r.extra["container"].dump();
  EXPECT_EQ(r.state, DumpState::MetadataOnly) << r.reason;
  const auto& ct = r.extra["container"];
  for (const char* ns : {"pid", "mnt", "user", "uts"}) EXPECT_EQ(ct["namespaces_differ"][ns], true) << ns << ct.dump();
  EXPECT_EQ(ct["namespaces_differ"]["net"], false) << "unshare kept the host's network namespace";
  EXPECT_EQ(ct.value("in_container", false), true);
  EXPECT_EQ(ct.value("key", ""), "pidns:" + std::to_string(ct["pidns"].get<std::uint64_t>()));

  // A crash on the host is not namespaced and the rule leaves it alone.
  pid_t pid = 0;
  const auto host = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(host);
  EXPECT_EQ(host->extra.value("rule", "?"), "");
  for (const char* ns : {"pid", "mnt", "user", "uts", "net"})
    EXPECT_EQ(host->extra["container"]["namespaces_differ"][ns], false) << ns << host->extra["container"].dump();
  EXPECT_NE(daemon_->log().find("host namespaces: "), std::string::npos) << "the reference is said at start";
}

}  // namespace
