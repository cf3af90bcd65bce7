// The fleet index's side of an upload (issue 26, "1,000 queued records reach a local PostgreSQL"):
// N realistic FleetRecords upserted into an empty database the way the daemon's uploader does it
// (daemon/upload/upload_step.cc: one FleetIndex per worker, one upsert per record, each its own
// statement in autocommit), then all N again (the idempotent re-send after a restart: the row
// count must not change), then the reads of `dumpctl fleet`: top_signatures and crashes_of.
// Measures the upsert step only, not the S3 put of each record JSON that precedes it.
//
//   fleet-bench --conninfo 'host=/tmp/pg port=45432 user=postgres dbname=fleet' [--records N]
//
// Prints one line of key=value (bench/fleet_bench.sh takes medians over runs): connect_ms
// (connect + schema migrations), insert_s / insert_per_s (first pass), resend_s / resend_per_s
// (second pass), rows, top_ms (median of top_signatures over the whole window, limit 20) and
// crashes_of_ms (median of crashes_of for each signature, limit 100: `dumpctl fleet`'s defaults).
// Exits 1 if the database is not empty at the start or the row count is wrong.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fleet/fleet_index.h"

namespace {

using coredumpd::FleetIndex;
using coredumpd::FleetRecord;
using Clock = std::chrono::steady_clock;

// splitmix64: deterministic ids and hashes, the same records every run.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// `hex_digits` hex digits derived from `seed` (a SHA-256 is 64, a GNU build-id 40, a machine id 32).
std::string hex(std::uint64_t seed, int hex_digits) {
  std::string out;
  for (std::uint64_t i = 0; static_cast<int>(out.size()) < hex_digits; ++i) {
    char part[17];
    std::snprintf(part, sizeof part, "%016llx", static_cast<unsigned long long>(mix(seed * 1000003ULL + i)));
    out += part;
  }
  out.resize(static_cast<std::size_t>(hex_digits));
  return out;
}

constexpr int kHosts = 3;
constexpr int kSignatures = 20;
constexpr int kPrograms = 8;

// Record i of n, all n over one day: on host i % 3, with a skewed signature (a few frequent crashes and
// a long tail, as a fleet has), its program's build-id first then 2-4 shared libraries' (libc, libstdc++, ...), and the states
// the uploader writes (core uploaded, metadata only, core skipped for a known signature).
FleetRecord make_record(int i, int n, std::int64_t start_us) {
  FleetRecord r;
  const int host = i % kHosts;
  r.host_id = "host-" + std::string(1, static_cast<char>('a' + host));
  r.machine_id = hex(0x1000 + static_cast<std::uint64_t>(host), 32);
  r.timestamp_us = start_us + static_cast<std::int64_t>(i) * 86'400'000'000LL / n;
  // The store's ids: the crash time in µs, then 64 random bits (store/index.h's DumpRecord::id).
  char id[33];
  std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(r.timestamp_us),
                static_cast<unsigned long long>(mix(static_cast<std::uint64_t>(i))));
  r.dump_id = id;
  const std::uint64_t u = mix(0x5167 + static_cast<std::uint64_t>(i)) % 1000;
  const int sig = static_cast<int>(u * u * kSignatures / 1'000'000);  // skewed towards 0
  const int prog = sig % kPrograms;
  r.comm = "prog" + std::to_string(prog);
  r.exe = "/usr/local/bin/" + r.comm;
  r.signal = sig % 3 == 0 ? 6 : 11;
  r.signature = hex(0x5000 + static_cast<std::uint64_t>(sig), 64);
  r.signature_text = r.comm + "!handler_" + std::to_string(sig) + " <- " + r.comm + "!dispatch <- " + r.comm + "!main";
  const int version = host == 2 ? 4 : 3;  // one host runs a newer build of every program
  r.build_ids.push_back(hex(0xb000 + static_cast<std::uint64_t>(prog * 10 + version), 40));
  for (int l = 0; l < 2 + prog % 3; ++l) r.build_ids.push_back(hex(0xc000 + static_cast<std::uint64_t>(l), 40));
  r.package = prog % 2 == 0 ? r.comm + " 1." + std::to_string(version) + ".0" : "";
  r.container = i % 5 == 0 ? "systemd:" + r.comm + ".service" : "";
  r.record_key = r.host_id + "/" + r.dump_id + "/record.json";
  if (i % 10 == 0) {
    r.state = "metadata";
  } else if (i % 4 == 0) {
    r.state = "skipped";
  } else {
    r.state = "uploaded";
    r.object_key = r.host_id + "/" + r.dump_id + "/core.zst";
    r.core_bytes = 1'500'000 + mix(static_cast<std::uint64_t>(i) + 7) % 40'000'000;
  }
  return r;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Rows in the index: the counts of top_signatures over all time (every record has a signature).
std::uint64_t row_count(FleetIndex& index) {
  std::uint64_t n = 0;
  for (const auto& s : index.top_signatures(INT64_MIN, INT64_MAX, SIZE_MAX)) n += s.count;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Upserts N FleetRecords into the fleet index twice and times the reads (bench/README.md)"};
  std::string conninfo;
  int records = 1000;
  int query_reps = 20;
  app.add_option("--conninfo", conninfo, "libpq connection string of an empty database")->required();
  app.add_option("--records", records, "records to upsert")->check(CLI::PositiveNumber);
  app.add_option("--query-reps", query_reps, "calls of top_signatures timed")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    const std::int64_t start_us = 1'764'892'800'000'000;  // 2025-12-05 00:00 UTC
    std::vector<FleetRecord> recs;
    recs.reserve(static_cast<std::size_t>(records));
    for (int i = 0; i < records; ++i) recs.push_back(make_record(i, records, start_us));

    auto t0 = Clock::now();
    FleetIndex index(conninfo);
    const double connect_ms = seconds_since(t0) * 1e3;
    if (const std::uint64_t before = row_count(index); before != 0) {
      std::fprintf(stderr, "fleet-bench: the database already holds %llu crashes; give it an empty one\n",
                   static_cast<unsigned long long>(before));
      return 1;
    }

    t0 = Clock::now();
    for (const auto& r : recs) index.upsert(r);
    const double insert_s = seconds_since(t0);
    t0 = Clock::now();
    for (const auto& r : recs) index.upsert(r);
    const double resend_s = seconds_since(t0);
    const std::uint64_t rows = row_count(index);
    if (rows != static_cast<std::uint64_t>(records)) {
      std::fprintf(stderr, "fleet-bench: %llu rows after two passes of %d records\n", static_cast<unsigned long long>(rows),
                   records);
      return 1;
    }

    std::vector<double> top_ms;
    std::vector<std::string> signatures;
    for (int q = 0; q < query_reps; ++q) {
      t0 = Clock::now();
      const auto top = index.top_signatures(start_us, start_us + 86'400'000'000LL, 20);
      top_ms.push_back(seconds_since(t0) * 1e3);
      if (signatures.empty())
        for (const auto& s : top) signatures.push_back(s.signature);
    }
    std::vector<double> crashes_ms;
    for (const auto& sig : signatures) {
      t0 = Clock::now();
      (void)index.crashes_of(sig, 100);
      crashes_ms.push_back(seconds_since(t0) * 1e3);
    }
    std::printf(
        "records=%d connect_ms=%.1f insert_s=%.3f insert_per_s=%.0f resend_s=%.3f resend_per_s=%.0f rows=%llu "
        "signatures=%zu top_ms=%.2f crashes_of_ms=%.2f\n",
        records, connect_ms, insert_s, records / insert_s, resend_s, records / resend_s,
        static_cast<unsigned long long>(rows), signatures.size(), median(top_ms), median(crashes_ms));
    return 0;
  } catch (const coredumpd::FleetIndexError& e) {
    std::fprintf(stderr, "fleet-bench: %s\n", e.what());
    return 1;
  }
}
