// load_s3_credentials(): the configured root-only file, the AWS variables, the AWS shared file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <boost/property_tree/ini_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "s3/s3_client.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

// A credentials file holds a few profiles: a larger one is the wrong file, not read into memory.
constexpr off_t kMaxCredentialsBytes = 1 << 20;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Reads the INI file `path`, profile `profile` (the AWS shared credentials format). `root_only`:
// refuse it unless only its owner (root or us) can read it: the secret must not leak to users.
std::optional<S3Credentials> from_file(const std::string& path, const std::string& profile, bool root_only,
                                       std::string* why) {
  // O_NONBLOCK: a FIFO at the path would make open() wait for a writer for ever.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    *why = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = path + ": not a regular file";
    return std::nullopt;
  }
  if (root_only && ((st.st_mode & 077) != 0 || (st.st_uid != 0 && st.st_uid != ::geteuid()))) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    *why = path + ": refused: mode " + mode + ", owner uid " + std::to_string(st.st_uid) +
           " (the credentials file must be 0600 or 0400 and owned by root)";
    return std::nullopt;
  }
  if (st.st_size > kMaxCredentialsBytes) {
    *why = path + ": refused: " + std::to_string(st.st_size) + " bytes, larger than " +
           std::to_string(kMaxCredentialsBytes) + " (is it the credentials file?)";
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  if (st.st_size > 0 && ::pread(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    *why = path + ": cannot read it";
    return std::nullopt;
  }
  boost::property_tree::ptree tree;
  try {
    std::istringstream in(text);
    boost::property_tree::ini_parser::read_ini(in, tree);
  } catch (const boost::property_tree::ini_parser_error& e) {
    *why = path + ": line " + std::to_string(e.line()) + ": " + e.message();
    return std::nullopt;
  }
  const auto section = tree.get_child_optional(profile);
  if (!section) {
    *why = path + ": no profile [" + profile + "]";
    return std::nullopt;
  }
  S3Credentials c;
  c.access_key_id = section->get<std::string>("aws_access_key_id", "");
  c.secret_access_key = section->get<std::string>("aws_secret_access_key", "");
  c.session_token = section->get<std::string>("aws_session_token", "");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    *why = path + ": profile [" + profile + "] lacks aws_access_key_id or aws_secret_access_key";
    return std::nullopt;
  }
  return c;
}

}  // namespace

std::optional<S3Credentials> load_s3_credentials(const std::string& file, std::string* why) {
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  // The configured file is the administrator's explicit choice: when it is unusable, say so rather
  // than fall back to whatever the environment holds.
  if (!file.empty()) return from_file(file, profile, /*root_only=*/true, why);
  if (!env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty())
    return S3Credentials{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
  std::string shared = env("AWS_SHARED_CREDENTIALS_FILE");
  if (shared.empty() && !env("HOME").empty()) shared = env("HOME") + "/.aws/credentials";
  if (shared.empty()) {
    *why = "no credentials: no credentials file configured, no AWS_ACCESS_KEY_ID, no HOME";
    return std::nullopt;
  }
  if (::access(shared.c_str(), F_OK) != 0) {
    *why = "no credentials: no credentials file configured, AWS_ACCESS_KEY_ID unset, no " + shared;
    return std::nullopt;
  }
  return from_file(shared, profile, /*root_only=*/false, why);
}

}  // namespace coredumpd
