#include "s3/s3_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <charconv>
#include <cstring>
#include <memory>
#include <optional>

namespace coredumpd::s3xml {

namespace {

struct DocFree {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};
using Doc = std::unique_ptr<xmlDoc, DocFree>;

// XML_PARSE_NONET: a reply never makes us fetch a DTD; NOERROR/NOWARNING: no libxml2 lines on stderr.
Doc parse(const std::string& body) {
  if (body.empty()) return nullptr;
  return Doc(xmlReadMemory(body.data(), static_cast<int>(body.size()), "s3.xml", nullptr,
                           XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
}

bool named(const xmlNode* n, const char* name) {
  return n->type == XML_ELEMENT_NODE && std::strcmp(reinterpret_cast<const char*>(n->name), name) == 0;
}

std::string text_of(const xmlNode* n) {
  xmlChar* s = xmlNodeGetContent(n);
  std::string out = s ? reinterpret_cast<const char*>(s) : "";
  xmlFree(s);
  return out;
}

const xmlNode* find(const xmlNode* n, const char* name) {
  for (; n; n = n->next) {
    if (named(n, name)) return n;
    if (const xmlNode* c = find(n->children, name)) return c;
  }
  return nullptr;
}

std::string child_text(const xmlNode* parent, const char* name) {
  for (const xmlNode* c = parent->children; c; c = c->next)
    if (named(c, name)) return text_of(c);
  return {};
}

// libxml2's BAD_CAST without the old-style cast.
const xmlChar* xc(const char* s) { return reinterpret_cast<const xmlChar*>(s); }

// A decimal in [lo, hi], nothing else (std::atoi would read "12abc" as 12 and overflow on a long one).
template <class T>
std::optional<T> decimal(const std::string& text, T lo, T hi) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

std::string first_text(const std::string& body, const char* name) {
  const Doc doc = parse(body);
  if (!doc) return {};
  const xmlNode* n = find(xmlDocGetRootElement(doc.get()), name);
  return n ? text_of(n) : std::string();
}

std::string error_text(const std::string& body) {
  const Doc doc = parse(body);
  if (!doc) return {};
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!root || !named(root, "Error")) return {};
  std::string code = child_text(root, "Code"), message = child_text(root, "Message");
  return message.empty() ? code : code + ": " + message;
}

bool list_parts(const std::string& body, std::vector<S3Client::Part>* parts, bool* truncated, int* next_marker) {
  const Doc doc = parse(body);
  if (!doc) return false;
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!root) return false;
  std::optional<int> marker = 0;
  if (const std::string m = child_text(root, "NextPartNumberMarker"); !m.empty())
    marker = decimal<int>(m, 0, kMaxPartNumber);
  if (!marker) return false;
  std::vector<S3Client::Part> found;
  for (const xmlNode* c = root->children; c; c = c->next) {
    if (!named(c, "Part")) continue;
    const auto number = decimal<int>(child_text(c, "PartNumber"), 1, kMaxPartNumber);
    const auto size = decimal<std::uint64_t>(child_text(c, "Size"), 0, UINT64_MAX);
    if (!number || !size) return false;
    found.push_back(S3Client::Part{*number, child_text(c, "ETag"), *size});
  }
  *truncated = child_text(root, "IsTruncated") == "true";
  *next_marker = *marker;
  parts->insert(parts->end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  return true;
}

std::string complete_multipart_body(const std::vector<S3Client::Part>& parts) {
  const Doc doc(xmlNewDoc(xc("1.0")));
  xmlNode* root = xmlNewNode(nullptr, xc("CompleteMultipartUpload"));
  xmlDocSetRootElement(doc.get(), root);
  for (const auto& p : parts) {
    xmlNode* part = xmlNewChild(root, nullptr, xc("Part"), nullptr);
    xmlNewTextChild(part, nullptr, xc("PartNumber"), xc(std::to_string(p.number).c_str()));
    xmlNewTextChild(part, nullptr, xc("ETag"), xc(p.etag.c_str()));
  }
  xmlChar* text = nullptr;
  int len = 0;
  xmlDocDumpMemoryEnc(doc.get(), &text, &len, "UTF-8");
  std::string out = text ? std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(len)) : "";
  xmlFree(text);
  return out;
}

}  // namespace coredumpd::s3xml
