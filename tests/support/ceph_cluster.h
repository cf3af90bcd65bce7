// A real S3 endpoint for tests: a single-node Ceph and radosgw started by scripts/fleet/ceph-up.sh
// in a temporary directory, on ports of its own, stopped by ceph-down.sh. One per test program
// (a gtest Environment holds it): start-up costs 1.5-6 s.
#pragma once

#include <optional>
#include <string>

namespace coredumpd::test {

/// The cluster. start() once; stop() (or the destructor, or exit) tears it down.
class CephCluster {
 public:
  /// `scripts_dir`: the folder holding ceph-up.sh and ceph-down.sh.
  explicit CephCluster(std::string scripts_dir);
  ~CephCluster();
  CephCluster(const CephCluster&) = delete;
  CephCluster& operator=(const CephCluster&) = delete;

  /// Why it cannot run here (the Ceph packages missing), or std::nullopt.
  static std::optional<std::string> unavailable();
  /// Starts it (ports from this process's pid, so test programs run in parallel apart). Returns
  /// "" or why it failed (the script's output).
  std::string start();
  void stop();
  /// Stops or starts radosgw alone (the S3 endpoint goes away; the data stays). True on success.
  bool stop_rgw();
  bool start_rgw();

  const std::string& endpoint() const { return endpoint_; }
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  int rgw_port() const { return rgw_port_; }

 private:
  std::string env_prefix() const;
  std::string scripts_;
  std::string dir_;
  int mon_port_ = 0, rgw_port_ = 0, osd_port_min_ = 0;
  bool up_ = false;
  std::string endpoint_, access_key_ = "TESTACCESSKEY0000001", secret_key_ = "testsecretkey000000000000000000000000001";
};

}  // namespace coredumpd::test
