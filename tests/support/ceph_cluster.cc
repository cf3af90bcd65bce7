#include "tests/support/ceph_cluster.h"

#include <unistd.h>

#include <cstdlib>

#include "tests/support/test_support.h"

namespace coredumpd::test {

CephCluster::CephCluster(std::string scripts_dir) : scripts_(std::move(scripts_dir)) {
  // 40 slots of 200 ports from 42000: mon, rgw and a 100-port messenger range each.
  const int slot = static_cast<int>(::getpid() % 40);
  mon_port_ = 42000 + slot * 200;
  rgw_port_ = mon_port_ + 1;
  osd_port_min_ = mon_port_ + 100;
  dir_ = "/tmp/coredumpd-ceph-" + std::to_string(::getpid());
  endpoint_ = "http://127.0.0.1:" + std::to_string(rgw_port_);
}

CephCluster::~CephCluster() { stop(); }

std::optional<std::string> CephCluster::unavailable() {
  for (const char* tool : {"/usr/bin/ceph-mon", "/usr/bin/ceph-osd", "/usr/bin/radosgw", "/usr/bin/ceph"})
    if (::access(tool, X_OK) != 0)
      return std::string("no ") + tool + " (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw ceph-common)";
  return std::nullopt;
}

std::string CephCluster::env_prefix() const {
  return "CEPH_DIR=" + dir_ + " MON_PORT=" + std::to_string(mon_port_) + " RGW_PORT=" + std::to_string(rgw_port_) +
         " OSD_PORT_MIN=" + std::to_string(osd_port_min_) + " ";
}

std::string CephCluster::start() {
  if (up_) return "";
  up_ = true;  // from here, stop() cleans up whatever part started
  const auto [st, out] = run_capture({"/bin/sh", "-c", env_prefix() + scripts_ + "/ceph-up.sh 2>&1"}, 180s);
  if (!st.exited || st.exit_code() != 0) return "ceph-up.sh failed: " + out;
  return "";
}

void CephCluster::stop() {
  if (!up_) return;
  up_ = false;
  run_capture({"/bin/sh", "-c", env_prefix() + scripts_ + "/ceph-down.sh >/dev/null 2>&1"}, 60s);
}

bool CephCluster::stop_rgw() {
  const auto [st, out] = run_capture({"/bin/sh", "-c", env_prefix() + "RGW_ONLY=stop " + scripts_ + "/ceph-up.sh"}, 60s);
  return st.exited && st.exit_code() == 0;
}

bool CephCluster::start_rgw() {
  const auto [st, out] = run_capture({"/bin/sh", "-c", env_prefix() + "RGW_ONLY=start " + scripts_ + "/ceph-up.sh"}, 90s);
  return st.exited && st.exit_code() == 0;
}

}  // namespace coredumpd::test
