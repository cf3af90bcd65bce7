// S3Client: one libcurl easy handle, SigV4 by CURLOPT_AWS_SIGV4 (s3_client.h).
#include "s3/s3_client.h"

#include <curl/curl.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "s3/s3_xml.h"

namespace coredumpd {

namespace {

// The largest reply body kept (errors and lists are small): a hostile endpoint cannot fill memory.
constexpr std::size_t kMaxReplyBytes = 1 << 20;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Path-style keys as S3 canonicalises them: every byte but the unreserved ones and '/' escaped, so
// that the path libcurl signs is the path the server canonicalises (SigV4, "CanonicalURI").
// Each '/'-separated segment through curl_easy_escape(), which keeps exactly RFC 3986's unreserved
// bytes (ALPHA DIGIT - . _ ~) as they are.
std::string escape_key(const std::string& key) {
  std::string out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t slash = key.find('/', from);
    const std::string segment = key.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
    char* escaped = curl_easy_escape(nullptr, segment.c_str(), static_cast<int>(segment.size()));
    if (!escaped) throw std::bad_alloc();
    out += escaped;
    curl_free(escaped);
    if (slash == std::string::npos) return out;
    out += '/';
    from = slash + 1;
  }
}

bool retryable_status(long status) { return status == 0 || status >= 500 || status == 429 || status == 408; }

}  // namespace

struct S3Client::Impl {
  S3Location where;
  S3Credentials creds;
  std::uint64_t max_bps = 0;
  std::function<bool()> cancelled;
  CURL* curl = nullptr;
  std::string sigv4;   // "aws:amz:<region>:s3"
  std::string userpwd;

  // One request's state, reset by request().
  std::string reply;
  std::string etag;
  int out_fd = -1;          // GET body goes here when the status is 2xx
  std::uint64_t out_max = 0, out_written = 0;  // its limit (0: none), and what was written
  int in_fd = -1;           // PUT body comes from here
  std::uint64_t in_offset = 0, in_left = 0;
  int write_errno = 0;
  bool reply_too_large = false;  // the reply body passed kMaxReplyBytes

  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* self_ptr) {
    auto* self = static_cast<Impl*>(self_ptr);
    const std::size_t bytes = size * n;
    long status = 0;
    curl_easy_getinfo(self->curl, CURLINFO_RESPONSE_CODE, &status);
    if (self->out_fd >= 0 && status >= 200 && status < 300) {
      if (self->out_max && bytes > self->out_max - self->out_written) {
        self->reply_too_large = true;
        return 0;  // aborts the transfer: CURLE_WRITE_ERROR
      }
      self->out_written += bytes;
      for (std::size_t done = 0; done < bytes;) {
        const ssize_t w = ::write(self->out_fd, data + done, bytes - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          self->write_errno = w < 0 ? errno : EIO;
          return 0;  // aborts the transfer: CURLE_WRITE_ERROR
        }
        done += static_cast<std::size_t>(w);
      }
      return bytes;
    }
    // Beyond the cap the transfer ends: a reply that never ends would hold the worker for ever.
    if (bytes > kMaxReplyBytes - self->reply.size()) {
      self->reply_too_large = true;
      return 0;  // aborts the transfer: CURLE_WRITE_ERROR
    }
    self->reply.append(data, bytes);
    return bytes;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* self_ptr) {
    auto* self = static_cast<Impl*>(self_ptr);
    const std::size_t bytes = size * n;
    std::string line(data, bytes);
    if (line.size() > 5 && strncasecmp(line.c_str(), "etag:", 5) == 0) {
      std::string v = line.substr(5);
      const auto b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t\r\n");
      self->etag = b == std::string::npos ? "" : v.substr(b, e - b + 1);
    }
    return bytes;
  }

  static std::size_t on_read(char* buf, std::size_t size, std::size_t n, void* self_ptr) {
    auto* self = static_cast<Impl*>(self_ptr);
    const std::size_t want = std::min<std::uint64_t>(size * n, self->in_left);
    if (want == 0) return 0;
    for (;;) {
      const ssize_t r = ::pread(self->in_fd, buf, want, static_cast<off_t>(self->in_offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return CURL_READFUNC_ABORT;  // the file shrank or failed: never send a short object
      self->in_offset += static_cast<std::uint64_t>(r);
      self->in_left -= static_cast<std::uint64_t>(r);
      return static_cast<std::size_t>(r);
    }
  }

  static int on_progress(void* self_ptr, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* self = static_cast<Impl*>(self_ptr);
    return self->cancelled && self->cancelled() ? 1 : 0;
  }

  enum class Body { None, Text, Fd };

  /// One request. `query` is already canonical (sorted, every name with '='). For Body::Text the
  /// body is `text`; for Body::Fd it is in_fd/in_offset/in_left. `head`: no reply body.
  S3Result request(const char* method, const std::string& key, const std::string& query, Body body,
                   const std::string& text = {}, const std::string& content_type = {}, bool head = false) {
    curl_easy_reset(curl);  // keeps the connection cache: keep-alive across requests
    reply.clear();
    etag.clear();
    write_errno = 0;
    reply_too_large = false;
    std::string url = where.endpoint;
    while (!url.empty() && url.back() == '/') url.pop_back();
    url += "/" + where.bucket;
    if (!key.empty()) url += "/" + escape_key(key);
    if (!query.empty()) url += "?" + query;

    curl_slist* headers = nullptr;
    // libcurl 7.88 signs without sending x-amz-content-sha256, which S3 requires: every request
    // would be refused (403 SignatureDoesNotMatch). The body is sent unsigned (the TLS, when used,
    // protects it; the signature still covers method, path, query and headers).
    headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!creds.session_token.empty())
      headers = curl_slist_append(headers, ("x-amz-security-token: " + creds.session_token).c_str());
    if (!content_type.empty()) headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
    // No "Expect:" override: libcurl 7.88 signs the emptied header and radosgw then answers 403.

    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERPWD, userpwd.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    // A stalled peer: less than 1 byte/s for 60 s ends the request (retried by the caller).
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Impl::on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Impl::on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &Impl::on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
    if (max_bps) {
      curl_easy_setopt(curl, CURLOPT_MAX_SEND_SPEED_LARGE, static_cast<curl_off_t>(max_bps));
      curl_easy_setopt(curl, CURLOPT_MAX_RECV_SPEED_LARGE, static_cast<curl_off_t>(max_bps));
    }
    const std::string m = method;
    if (m == "PUT") {
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, &Impl::on_read);
      curl_easy_setopt(curl, CURLOPT_READDATA, this);
      if (body == Body::Text) {
        // A text body goes through the same reader: from a memfd-free copy in memory.
        text_body = text;
        curl_easy_setopt(curl, CURLOPT_READFUNCTION, &Impl::on_read_text);
        text_pos = 0;
        curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(text.size()));
      } else if (body == Body::Fd) {
        curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(in_left));
      } else {
        curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, curl_off_t{0});
      }
    } else if (m == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(text.size()));
      curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, text.c_str());
    } else if (m == "HEAD" || head) {
      curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (m != "GET") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    }

    const CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    S3Result res;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &res.http_status);
    if (rc == CURLE_WRITE_ERROR && reply_too_large) {  // a broken or hostile endpoint: try again later
      res.error = std::string(method) + " " + url + ": the reply is larger than " +
                  std::to_string(out_fd >= 0 && out_max ? out_max : kMaxReplyBytes) + " bytes (HTTP " +
                  std::to_string(res.http_status) + ")";
      res.http_status = 0;
      res.retryable = true;
      return res;
    }
    if (rc != CURLE_OK) {
      res.http_status = rc == CURLE_WRITE_ERROR ? res.http_status : 0;
      res.error = rc == CURLE_WRITE_ERROR && write_errno ? std::string("writing the object: ") + std::strerror(write_errno)
                  : rc == CURLE_ABORTED_BY_CALLBACK ? std::string("cancelled")
                                                    : std::string(curl_easy_strerror(rc)) + " (" + url + ")";
      res.retryable = rc != CURLE_WRITE_ERROR && rc != CURLE_ABORTED_BY_CALLBACK && rc != CURLE_READ_ERROR &&
                      rc != CURLE_UNSUPPORTED_PROTOCOL && rc != CURLE_URL_MALFORMAT;
      return res;
    }
    res.ok = res.http_status >= 200 && res.http_status < 300;
    if (!res.ok) {
      res.retryable = retryable_status(res.http_status);
      const std::string s3_error = s3xml::error_text(reply);
      res.error = std::string(method) + " " + url + ": HTTP " + std::to_string(res.http_status) +
                  (s3_error.empty() ? "" : " " + s3_error);
    }
    return res;
  }

  std::string text_body;
  std::size_t text_pos = 0;
  static std::size_t on_read_text(char* buf, std::size_t size, std::size_t n, void* self_ptr) {
    auto* self = static_cast<Impl*>(self_ptr);
    const std::size_t k = std::min(size * n, self->text_body.size() - self->text_pos);
    std::memcpy(buf, self->text_body.data() + self->text_pos, k);
    self->text_pos += k;
    return k;
  }
};

S3Client::S3Client(S3Location where, S3Credentials creds, std::uint64_t max_bytes_per_second) : impl_(new Impl) {
  global_init();
  impl_->where = std::move(where);
  impl_->creds = std::move(creds);
  impl_->max_bps = max_bytes_per_second;
  impl_->sigv4 = "aws:amz:" + impl_->where.region + ":s3";
  impl_->userpwd = impl_->creds.access_key_id + ":" + impl_->creds.secret_access_key;
  impl_->curl = curl_easy_init();
  if (!impl_->curl) {
    delete impl_;
    throw std::bad_alloc();
  }
}

S3Client::~S3Client() {
  curl_easy_cleanup(impl_->curl);
  delete impl_;
}

void S3Client::set_cancel(std::function<bool()> cancelled) { impl_->cancelled = std::move(cancelled); }

S3Result S3Client::create_bucket() {
  S3Result r = impl_->request("PUT", "", "", Impl::Body::None);
  // Ours already: radosgw answers 200, AWS 409 BucketAlreadyOwnedByYou (us-east-1 answers 200).
  if (!r.ok && r.http_status == 409 && r.error.find("BucketAlreadyOwnedByYou") != std::string::npos) return S3Result{true, 409, false, {}};
  return r;
}

S3Result S3Client::put_object(const std::string& key, const std::string& body, const std::string& content_type) {
  return impl_->request("PUT", key, "", Impl::Body::Text, body, content_type);
}

S3Result S3Client::put_object_from_fd(const std::string& key, int fd, std::uint64_t offset, std::uint64_t length) {
  impl_->in_fd = fd;
  impl_->in_offset = offset;
  impl_->in_left = length;
  return impl_->request("PUT", key, "", Impl::Body::Fd, {}, "application/octet-stream");
}

S3Result S3Client::head_object(const std::string& key, std::uint64_t* size) {
  S3Result r = impl_->request("HEAD", key, "", Impl::Body::None, {}, {}, true);
  if (r.ok && size) {
    curl_off_t len = -1;
    curl_easy_getinfo(impl_->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
    *size = len < 0 ? 0 : static_cast<std::uint64_t>(len);
  }
  return r;
}

S3Result S3Client::get_object_to_fd(const std::string& key, int fd, std::uint64_t max_bytes) {
  impl_->out_fd = fd;
  impl_->out_max = max_bytes;
  impl_->out_written = 0;
  S3Result r = impl_->request("GET", key, "", Impl::Body::None);
  impl_->out_fd = -1;
  impl_->out_max = 0;
  return r;
}

S3Result S3Client::delete_object(const std::string& key) { return impl_->request("DELETE", key, "", Impl::Body::None); }

S3Result S3Client::create_multipart(const std::string& key, std::string* upload_id) {
  // "uploads=": the canonical form of a valueless parameter; libcurl 7.88 signs the query as written.
  S3Result r = impl_->request("POST", key, "uploads=", Impl::Body::Text, "", "application/octet-stream");
  if (r.ok) {
    *upload_id = s3xml::first_text(impl_->reply, "UploadId");
    if (upload_id->empty()) r = S3Result{false, r.http_status, true, "POST ?uploads: no UploadId in the reply"};
  }
  return r;
}

S3Result S3Client::upload_part(const std::string& key, const std::string& upload_id, int part_number, int fd,
                               std::uint64_t offset, std::uint64_t length, std::string* etag) {
  impl_->in_fd = fd;
  impl_->in_offset = offset;
  impl_->in_left = length;
  char* id = curl_easy_escape(impl_->curl, upload_id.c_str(), static_cast<int>(upload_id.size()));
  const std::string query = "partNumber=" + std::to_string(part_number) + "&uploadId=" + id;
  curl_free(id);
  S3Result r = impl_->request("PUT", key, query, Impl::Body::Fd);
  if (r.ok && etag) *etag = impl_->etag;
  return r;
}

S3Result S3Client::list_parts(const std::string& key, const std::string& upload_id, std::vector<Part>* parts) {
  parts->clear();
  char* id = curl_easy_escape(impl_->curl, upload_id.c_str(), static_cast<int>(upload_id.size()));
  const std::string escaped = id;
  curl_free(id);
  int marker = 0;
  for (;;) {  // pages of 1000 parts
    const std::string query = marker ? "part-number-marker=" + std::to_string(marker) + "&uploadId=" + escaped
                                     : "uploadId=" + escaped;
    S3Result r = impl_->request("GET", key, query, Impl::Body::None);
    if (!r.ok) return r;
    bool truncated = false;
    int next = 0;
    if (!s3xml::list_parts(impl_->reply, parts, &truncated, &next))
      return S3Result{false, r.http_status, true, "ListParts: the reply is not XML or has a number out of range"};
    // A server that keeps saying "truncated" cannot make us list more than S3's 10,000 parts.
    if (!truncated || next <= marker || parts->size() > s3xml::kMaxPartNumber) return r;
    marker = next;
  }
}

S3Result S3Client::complete_multipart(const std::string& key, const std::string& upload_id, const std::vector<Part>& parts) {
  const std::string xml = s3xml::complete_multipart_body(parts);
  char* id = curl_easy_escape(impl_->curl, upload_id.c_str(), static_cast<int>(upload_id.size()));
  const std::string query = std::string("uploadId=") + id;
  curl_free(id);
  S3Result r = impl_->request("POST", key, query, Impl::Body::Text, xml, "application/xml");
  // S3 may answer 200 with an <Error> body when the completion failed after the headers were sent.
  if (r.ok && !s3xml::error_text(impl_->reply).empty())
    r = S3Result{false, r.http_status, true, "CompleteMultipartUpload: " + s3xml::error_text(impl_->reply)};
  return r;
}

S3Result S3Client::abort_multipart(const std::string& key, const std::string& upload_id) {
  char* id = curl_easy_escape(impl_->curl, upload_id.c_str(), static_cast<int>(upload_id.size()));
  const std::string query = std::string("uploadId=") + id;
  curl_free(id);
  return impl_->request("DELETE", key, query, Impl::Body::None);
}

}  // namespace coredumpd
