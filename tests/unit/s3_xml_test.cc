// s3/s3_xml.h: what the S3 client believes of a server's XML reply, and the request body it writes.
#include "s3/s3_xml.h"

#include <gtest/gtest.h>

namespace coredumpd::s3xml {
namespace {

constexpr const char* kListParts =
    R"(<?xml version="1.0" encoding="UTF-8"?><ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
    R"(<NextPartNumberMarker>2</NextPartNumberMarker><IsTruncated>true</IsTruncated>)"
    R"(<Part><PartNumber>1</PartNumber><ETag>"aa"</ETag><Size>8388608</Size></Part>)"
    R"(<Part><PartNumber>2</PartNumber><ETag>"bb"</ETag><Size>17</Size></Part></ListPartsResult>)";

TEST(S3Xml, ListPartsReadsPartsMarkerAndTruncation) {
  std::vector<S3Client::Part> parts;
  bool truncated = false;
  int marker = -1;
  ASSERT_TRUE(list_parts(kListParts, &parts, &truncated, &marker));
  EXPECT_TRUE(truncated);
  EXPECT_EQ(marker, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].number, 1);
  EXPECT_EQ(parts[0].etag, "\"aa\"");
  EXPECT_EQ(parts[0].size, 8388608u);
  EXPECT_EQ(parts[1].size, 17u);
}

// std::atoi read "12abc" as 12, "-1" as -1 and overflowed on long digits: a hostile server could
// make the resume logic skip or repeat parts. Each of these replies is now refused as a whole.
TEST(S3Xml, ListPartsRefusesNumbersOutOfRangeOrNotDecimal) {
  const char* bad[] = {
      "<ListPartsResult><Part><PartNumber>0</PartNumber><Size>1</Size></Part></ListPartsResult>",
      "<ListPartsResult><Part><PartNumber>-1</PartNumber><Size>1</Size></Part></ListPartsResult>",
      "<ListPartsResult><Part><PartNumber>10001</PartNumber><Size>1</Size></Part></ListPartsResult>",
      "<ListPartsResult><Part><PartNumber>12abc</PartNumber><Size>1</Size></Part></ListPartsResult>",
      "<ListPartsResult><Part><PartNumber>99999999999999999999</PartNumber><Size>1</Size></Part></ListPartsResult>",
      "<ListPartsResult><Part><PartNumber>1</PartNumber><Size>184467440737095516160</Size></Part></ListPartsResult>",
      "<ListPartsResult><Part><PartNumber>1</PartNumber></Part></ListPartsResult>",
      "<ListPartsResult><NextPartNumberMarker>x</NextPartNumberMarker></ListPartsResult>",
      "not xml",
  };
  for (const char* body : bad) {
    std::vector<S3Client::Part> parts{S3Client::Part{5, "earlier page", 3}};
    bool truncated = false;
    int marker = -1;
    EXPECT_FALSE(list_parts(body, &parts, &truncated, &marker)) << body;
    EXPECT_EQ(parts.size(), 1u) << "nothing appended from " << body;
    EXPECT_EQ(marker, -1) << body;
  }
}

TEST(S3Xml, ErrorTextIsCodeAndMessageOfAnErrorReplyOnly) {
  EXPECT_EQ(error_text("<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>"), "NoSuchUpload: gone");
  EXPECT_EQ(error_text("<Error><Code>AccessDenied</Code></Error>"), "AccessDenied");
  EXPECT_EQ(error_text(kListParts), "");
  EXPECT_EQ(error_text(""), "");
  EXPECT_EQ(first_text("<I xmlns=\"x\"><Bucket>b</Bucket><UploadId>2~id</UploadId></I>", "UploadId"), "2~id");
}

// The ETag is the server's text: written back by hand it could end the element early.
TEST(S3Xml, CompleteMultipartBodyEscapesWhatTheServerSent) {
  const std::string body = complete_multipart_body({{1, "\"a\"", 0}, {2, "</ETag><x>&", 0}});
  EXPECT_NE(body.find("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"a\"</ETag></Part>"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("<ETag>&lt;/ETag&gt;&lt;x&gt;&amp;</ETag>"), std::string::npos) << body;
  EXPECT_EQ(first_text(body, "ETag"), "\"a\"");
}

}  // namespace
}  // namespace coredumpd::s3xml
