// The few facts the client reads from S3's XML replies (libxml2): an error's Code and Message,
// InitiateMultipartUploadResult's UploadId, ListPartsResult's parts. Element names are matched
// without their namespace (radosgw and AWS put xmlns="http://s3.amazonaws.com/doc/2006-03-01/").
#pragma once

#include <string>
#include <vector>

#include "s3/s3_client.h"

namespace coredumpd::s3xml {

/// "<Code>: <Message>" of an <Error> reply, or "" when `body` is not one (an empty HEAD reply).
std::string error_text(const std::string& body);

/// The text of the first element named `name` anywhere in `body`; "" when absent or not XML.
std::string first_text(const std::string& body, const char* name);

/// The part numbers S3 allows (1..10,000, the API's limit); a reply naming another is malformed.
inline constexpr int kMaxPartNumber = 10'000;

/// Appends the <Part> elements of a ListPartsResult (PartNumber, ETag, Size) in document order;
/// whether <IsTruncated> said true in *truncated and <NextPartNumberMarker> in *next_marker (0 when
/// absent). False, appending nothing, when `body` is not XML or a number is not a decimal in range
/// (a part number outside 1..kMaxPartNumber, a size over 2^64-1): a server's reply is not trusted.
bool list_parts(const std::string& body, std::vector<S3Client::Part>* parts, bool* truncated, int* next_marker);

/// The CompleteMultipartUpload request body naming `parts` (PartNumber and ETag, in the order given),
/// written by libxml2 so that an ETag is escaped whatever the server put in it.
std::string complete_multipart_body(const std::vector<S3Client::Part>& parts);

}  // namespace coredumpd::s3xml
