#include "s3/s3_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cstdlib>
#include <cstring>
#include <memory>

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
  *truncated = child_text(root, "IsTruncated") == "true";
  *next_marker = std::atoi(child_text(root, "NextPartNumberMarker").c_str());
  for (const xmlNode* c = root->children; c; c = c->next) {
    if (!named(c, "Part")) continue;
    S3Client::Part p;
    p.number = std::atoi(child_text(c, "PartNumber").c_str());
    p.etag = child_text(c, "ETag");
    p.size = std::strtoull(child_text(c, "Size").c_str(), nullptr, 10);
    parts->push_back(std::move(p));
  }
  return true;
}

}  // namespace coredumpd::s3xml
