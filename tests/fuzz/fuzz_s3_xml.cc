// libFuzzer target: the S3 server's XML replies (s3/s3_xml.h), which a misbehaving or hostile
// object store controls entirely.
//
// Input: the reply body.
//   - error_text, first_text and list_parts never crash (libxml2 parses; we walk the tree);
//   - list_parts either fails and appends nothing, or every part number is in 1..kMaxPartNumber
//     and the next marker in 0..kMaxPartNumber;
//   - the CompleteMultipartUpload body written from the parts read is XML that gives back the same
//     part numbers and ETags in order, whatever the ETags hold (escaping).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "s3/s3_xml.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using coredumpd::S3Client;

// The (PartNumber, ETag) pairs of a CompleteMultipartUpload body, read back with libxml2 directly.
bool read_back(const std::string& body, std::vector<std::pair<std::string, std::string>>* out) {
  xmlDoc* doc = xmlReadMemory(body.data(), static_cast<int>(body.size()), "c.xml", nullptr,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc) return false;
  for (xmlNode* p = xmlDocGetRootElement(doc)->children; p; p = p->next) {
    std::pair<std::string, std::string> entry;
    for (xmlNode* c = p->children; c; c = c->next) {
      xmlChar* t = xmlNodeGetContent(c);
      (std::string(reinterpret_cast<const char*>(c->name)) == "PartNumber" ? entry.first : entry.second) =
          reinterpret_cast<const char*>(t);
      xmlFree(t);
    }
    out->push_back(std::move(entry));
  }
  xmlFreeDoc(doc);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace x = coredumpd::s3xml;
  const std::string body(reinterpret_cast<const char*>(data), size);
  (void)x::error_text(body);
  (void)x::first_text(body, "UploadId");

  std::vector<S3Client::Part> parts{S3Client::Part{7, "kept", 1}};
  bool truncated = false;
  int marker = -1;
  if (!x::list_parts(body, &parts, &truncated, &marker)) {
    FUZZ_CHECK(parts.size() == 1 && marker == -1);
    return 0;
  }
  FUZZ_CHECK(marker >= 0 && marker <= x::kMaxPartNumber);
  for (const auto& p : parts) FUZZ_CHECK(p.number >= 1 && p.number <= x::kMaxPartNumber);

  std::vector<std::pair<std::string, std::string>> back;
  FUZZ_CHECK(read_back(x::complete_multipart_body(parts), &back));
  FUZZ_CHECK(back.size() == parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    FUZZ_CHECK(back[i].first == std::to_string(parts[i].number));
    FUZZ_CHECK(back[i].second == parts[i].etag);
  }
  return 0;
}
