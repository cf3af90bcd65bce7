// The table of the "upload" keys (config_keys.h), and the names of the upload modes.
#include <cctype>

#include "daemon/policy/config_keys.h"

namespace coredumpd {

namespace {

using nlohmann::json;

// A string with no control characters and no white space at its ends (keys, host names, URLs).
std::string plain_string(const KeyValue& v, bool allow_empty) {
  std::string s = v.string();
  if (!allow_empty && s.empty()) v.fail("must not be empty");
  for (const unsigned char c : s)
    if (std::iscntrl(c)) v.fail("must not contain control characters");
  if (!s.empty() && (std::isspace(static_cast<unsigned char>(s.front())) || std::isspace(static_cast<unsigned char>(s.back()))))
    v.fail("must not begin or end with white space");
  return s;
}

constexpr ConfigKey<UploadSettings> kUpload[] = {
    {.name = "endpoint", .type = "string", .values = "http:// or https:// URL without user@, ?query or #fragment; or \"\"",
     .description = "S3 endpoint the records and cores go to (path-style: <endpoint>/<bucket>/<key>); \"\": no uploads.",
     .apply = [](const KeyValue& v, UploadSettings& u) {
       u.endpoint = plain_string(v, true);
       if (!u.endpoint.empty() && !u.endpoint.starts_with("http://") && !u.endpoint.starts_with("https://"))
         v.fail("expected an http:// or https:// URL, got \"" + u.endpoint + "\"");
       // <endpoint>/<bucket>/<key>?<query> is built on it: a query or fragment would swallow the
       // rest, and a user:password@ (S3 ignores it; the keys come from the credentials) would be
       // written into every error line that names the URL.
       const std::string rest = u.endpoint.empty() ? "" : u.endpoint.substr(u.endpoint.find("://") + 3);
       const std::string authority = rest.substr(0, rest.find('/'));
       if (u.endpoint.find_first_of("?#") != std::string::npos || authority.find('@') != std::string::npos)
         v.fail("an endpoint is scheme://host[:port][/path], without user@, ?query or #fragment");
     },
     .write = [](const UploadSettings& u) -> json { return u.endpoint; }},
    {.name = "bucket", .type = "string", .values = "3-63 of a-z 0-9 . -",
     .description = "The bucket (created if missing).",
     .apply = [](const KeyValue& v, UploadSettings& u) {
       const std::string b = plain_string(v, false);
       if (b.size() < 3 || b.size() > 63) v.fail("a bucket name has 3 to 63 characters");
       for (const char c : b)
         if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-'))
           v.fail("a bucket name has only a-z, 0-9, '.' and '-'");
       u.bucket = b;
     },
     .write = [](const UploadSettings& u) -> json { return u.bucket; }},
    {.name = "region", .type = "string",
     .description = "The region requests are signed for (SigV4); radosgw takes any.",
     .apply = [](const KeyValue& v, UploadSettings& u) { u.region = plain_string(v, false); },
     .write = [](const UploadSettings& u) -> json { return u.region; }},
    {.name = "credentials_file", .type = "path", .values = "absolute, mode 0600/0400, owned by root; or \"\"",
     .description = "INI file of the S3 keys ([default] aws_access_key_id, aws_secret_access_key); \"\": "
                    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, then ~/.aws/credentials.",
     .apply = [](const KeyValue& v, UploadSettings& u) { u.credentials_file = v.value == "" ? std::string() : v.path(); },
     .write = [](const UploadSettings& u) -> json { return u.credentials_file; }},
    {.name = "host_id", .type = "string", .values = "a-z A-Z 0-9 . _ -, not \".\" or \"..\"; or \"\"",
     .default_text = "\"\": the hostname",
     .description = "This host's name in object keys (<host_id>/<dump id>/...) and in the fleet index.",
     .apply = [](const KeyValue& v, UploadSettings& u) {
       const std::string h = plain_string(v, true);
       for (const char c : h)
         if (!is_host_id_byte(c)) v.fail("a host id has only letters, digits, '.', '_' and '-'");
       if (is_dot_segment(h)) v.fail("a host id is not \".\" or \"..\"");
       u.host_id = h;
     },
     .write = [](const UploadSettings& u) -> json { return u.host_id; }},
    {.name = "max_bytes_per_second", .type = "size", .values = "0 = unbounded",
     .description = "Bandwidth of each upload, bytes per second (\"10M\").",
     .apply = [](const KeyValue& v, UploadSettings& u) { u.max_bytes_per_second = v.size(); },
     .write = [](const UploadSettings& u) -> json { return u.max_bytes_per_second; }},
    integer_key<&UploadSettings::concurrency>("concurrency", 1, 16, "Uploads at once (a thread and an S3 connection each)."),
    integer_key<&UploadSettings::queue>("queue", 1, 1'000'000,
        "Dumps queued for upload; later ones wait in the index and are queued as the queue drains."),
    {.name = "part_bytes", .type = "size", .values = "5M .. 5G",
     .description = "Multipart upload part size; a core smaller than one part is sent in one request.",
     .apply = [](const KeyValue& v, UploadSettings& u) {
       u.part_bytes = v.size();
       if (u.part_bytes < (std::uint64_t{5} << 20) || u.part_bytes > (std::uint64_t{5} << 30))
         v.fail("S3 parts are 5 MiB to 5 GiB");
     },
     .write = [](const UploadSettings& u) -> json { return u.part_bytes; }},
    {.name = "fleet_conninfo", .type = "string", .values = "libpq connection string, or \"\"",
     .description = "The fleet index (PostgreSQL) each upload's row goes to, e.g. \"host=db.example dbname=fleet\"; "
                    "\"\": none (core-if-new-signature then sends every core).",
     .apply = [](const KeyValue& v, UploadSettings& u) { u.fleet_conninfo = plain_string(v, true); },
     .write = [](const UploadSettings& u) -> json { return u.fleet_conninfo; }},
    integer_key<&UploadSettings::max_backoff>("max_backoff_s", 1, 86400,
        "Longest wait between two attempts of one upload, and between two probes of an endpoint (S3, the fleet index) "
        "that is down (each wait doubles from 1 s after each failure)."),
};

}  // namespace

const char* upload_mode_name(UploadMode m) {
  switch (m) {
    case UploadMode::None: return "none";
    case UploadMode::Metadata: return "metadata";
    case UploadMode::Core: return "core";
    case UploadMode::CoreIfNewSignature: return "core-if-new-signature";
  }
  return "none";
}

std::span<const ConfigKey<UploadSettings>> upload_keys() { return kUpload; }

}  // namespace coredumpd
