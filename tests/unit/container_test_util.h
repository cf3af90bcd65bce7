// Shared by the container identification tests (cgroup_path_test, systemd_unit_test,
// container_test): canned /proc/<pid>/cgroup texts in each cgroup layout, container ids, and the
// host's namespace inodes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/policy/container.h"

namespace coredumpd {

/// gtest prints a Runtime by its name.
inline void PrintTo(Runtime r, std::ostream* os) { *os << "Runtime(\"" << runtime_name(r) << "\")"; }

namespace container_test {

// Container ids are 64 lower-case hex digits (these are SHA-256 digests of "" and "test").
inline const std::string kId = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
inline const std::string kId2 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
inline const std::string kPodUid = "0b8e2b6a-3c1d-4e5f-9a7b-1c2d3e4f5a6b";
inline const std::string kPodUidUnderscored = "0b8e2b6a_3c1d_4e5f_9a7b_1c2d3e4f5a6b";

// /proc/<pid>/cgroup on a cgroup v1 "hybrid" host (systemd's default before v2, e.g. Debian 10,
// Ubuntu 20.04): twelve controller hierarchies, the named systemd hierarchy and the v2 line.
inline std::string hybrid(const std::string& path, const std::string& unified) {
  return "13:misc:/\n"
         "12:rdma:/\n"
         "11:hugetlb:" + path + "\n"
         "10:pids:" + path + "\n"
         "9:devices:" + path + "\n"
         "8:blkio:" + path + "\n"
         "7:freezer:" + path + "\n"
         "6:cpu,cpuacct:" + path + "\n"
         "5:net_cls,net_prio:" + path + "\n"
         "4:memory:" + path + "\n"
         "3:cpuset:" + path + "\n"
         "2:perf_event:" + path + "\n"
         "1:name=systemd:" + path + "\n"
         "0::" + unified + "\n";
}
inline std::string hybrid(const std::string& path) { return hybrid(path, path); }

// A pure cgroup v1 host (CentOS 7, "legacy" mode): no v2 line at all.
inline std::string legacy(const std::string& path) {
  return "11:cpuset:" + path + "\n"
         "10:hugetlb:" + path + "\n"
         "9:perf_event:" + path + "\n"
         "8:net_prio,net_cls:" + path + "\n"
         "7:memory:" + path + "\n"
         "6:devices:" + path + "\n"
         "5:freezer:" + path + "\n"
         "4:pids:" + path + "\n"
         "3:cpuacct,cpu:" + path + "\n"
         "2:blkio:" + path + "\n"
         "1:name=systemd:" + path + "\n";
}

// A cgroup v2 host: one line.
inline std::string unified(const std::string& path) { return "0::" + path + "\n"; }

inline ContainerInfo ident(const std::string& cgroup) {
  ContainerInputs in;
  in.cgroup = cgroup;
  return identify_container(in);
}

// The same answer from each of the v1 hybrid, v1 legacy and v2 forms of one path.
inline std::vector<ContainerInfo> all_layouts(const std::string& path) {
  return {ident(hybrid(path)), ident(legacy(path)), ident(unified(path))};
}

// Realistic namespace inodes of the initial namespaces.
inline nlohmann::json host_ns() {
  return {{"cgroup", 4026531835u}, {"ipc", 4026531839u}, {"mnt", 4026531841u}, {"net", 4026531840u},
          {"pid", 4026531836u},    {"time", 4026531834u}, {"user", 4026531837u}, {"uts", 4026531838u}};
}

}  // namespace container_test
}  // namespace coredumpd
