// `dumpctl fleet fetch`: a crash's core from S3, decompressed as `dumpctl dump` writes it.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/fleet/commands_fleet.h"
#include "cli/core_file.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/sparse_writer.h"
#include "cli/temp_file.h"
#include "store/dump_record.h"
#include "util/text.h"

namespace coredumpd::cli {

void require_fleet_core(const FleetRecord& r) {
  if (r.object_key.empty() || r.state != "uploaded")
    throw DumpctlError("crash " + escape_for_display(r.dump_id) + " of " + escape_for_display(r.host_id) +
                       " has no core in S3 (state " + escape_for_display(r.state) + ")");
}

int cmd_fleet_fetch(const FleetRecord& r, const S3Location& where, const S3Credentials& creds,
                    const std::string& output, JsonMode json, const Io& io) {
  const std::string id = escape_for_display(r.dump_id) + " of " + escape_for_display(r.host_id);
  require_fleet_core(r);
  const bool to_stdout = output.empty() || output == "-";
  if (to_stdout && io.out_is_tty)
    throw DumpctlError("refusing to write a core dump to a terminal: use -o FILE or redirect standard output");
  if (to_stdout && json != JsonMode::Off) throw DumpctlError("--json with fleet fetch needs -o FILE");
  const std::string shown_key = escape_for_display(r.object_key);

  // The object as stored, in a private file removed on every exit path (TempFile).
  TempFile download(to_stdout ? temp_dir() : dir_of(output), ".dumpctl-fetch-");
  S3Client s3(where, creds);
  // No more than the index says was uploaded: an endpoint that never stops must not fill the disk.
  const S3Result got = s3.get_object_to_fd(r.object_key, download.fd(), r.core_bytes);
  if (!got.ok)
    throw DumpctlError("cannot download s3://" + escape_for_display(where.bucket) + "/" + shown_key + " from " +
                       escape_for_display(where.endpoint) + ": " +
                       (got.http_status != 0 ? "HTTP " + std::to_string(got.http_status) + ": " : "") +
                       escape_for_display(got.error));
  struct stat sb {};
  if (::fstat(download.fd(), &sb) != 0) throw DumpctlError(std::string("cannot stat the download: ") + std::strerror(errno));
  const auto downloaded = static_cast<std::uint64_t>(sb.st_size);
  if (r.core_bytes != 0 && downloaded != r.core_bytes)
    throw DumpctlError("downloaded " + std::to_string(downloaded) + " bytes of " + shown_key + ", the index says " +
                       std::to_string(r.core_bytes));
  if (::lseek(download.fd(), 0, SEEK_SET) != 0) throw DumpctlError(std::string("cannot rewind the download: ") + std::strerror(errno));

  const std::string_view compression = r.object_key.ends_with(kZstdExtension) ? kCompressionZstd : kCompressionNone;
  const std::string shown = "the core of " + id + " (" + shown_key + ")";
  std::uint64_t bytes = 0;
  if (to_stdout) {
    bytes = stream_core_fd(download.fd(), compression, shown, [&](const char* p, std::size_t n) {
      io.out.write(p, static_cast<std::streamsize>(n));
      if (!io.out) throw DumpctlError("cannot write to standard output");
    });
    io.out.flush();
    if (!io.out) throw DumpctlError("cannot write to standard output");
  } else {
    TempFile out(dir_of(output), ".dumpctl-");
    SparseWriter w(out.fd(), escape_for_display(output));
    bytes = stream_core_fd(download.fd(), compression, shown, [&](const char* p, std::size_t n) { w.write(p, n); });
    w.finish();
    out.close();
    out.rename_to(output);
  }
  if (json != JsonMode::Off) {
    print_json({{"dump_id", bytes_to_json(r.dump_id)}, {"host_id", bytes_to_json(r.host_id)},
                {"object_key", bytes_to_json(r.object_key)}, {"output", bytes_to_json(output)}, {"bytes", bytes}},
               io, json);
  } else {
    io.err << "Fetched the core of " << id << " (" << format_size(bytes) << ") from " << shown_key
           << (to_stdout ? "" : " to " + escape_for_display(output)) << "; exe " << escape_for_display(r.exe) << "\n";
  }
  return 0;
}

}  // namespace coredumpd::cli
