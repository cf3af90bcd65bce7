// RecordsWriter / decode_records / CoreSource: the record encoding of docs/PROTOCOL.md §6.2 without sockets.
#include "tests/fake_kernel/records_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/fake_kernel/core_source.h"
#include "tests/fake_kernel/scripted_server.h"

namespace coredumpd::fake_kernel {
namespace {

constexpr std::uint64_t kPage = 4096;

std::vector<std::byte> encode_all(const CoreSource& core, RecordsOptions options) {
  RecordsWriter writer(core, std::move(options));
  std::vector<std::byte> stream;
  std::vector<std::byte> record;
  std::string error;
  while (writer.next(record, error)) stream.insert(stream.end(), record.begin(), record.end());
  EXPECT_EQ(error, "");
  EXPECT_TRUE(writer.finished());
  return stream;
}

std::vector<std::byte> materialize(const CoreSource& core) {
  std::string error;
  auto all = core.materialize(error);
  EXPECT_TRUE(all.has_value()) << error;
  return all.value_or(std::vector<std::byte>{});
}

// page 0 data, pages 1..3 zero, page 4 data, then a 100-byte all-zero partial page.
CoreSource mixed_core() {
  std::vector<std::byte> bytes(5 * kPage + 100, std::byte{0});
  for (std::uint64_t i = 0; i < kPage; ++i) {
    bytes[i] = CoreSource::pattern_byte(i, 1);
    bytes[4 * kPage + i] = CoreSource::pattern_byte(4 * kPage + i, 1);
  }
  return CoreSource::from_buffer(std::move(bytes));
}

struct Expected {
  RecordType type;
  std::uint64_t offset;
  std::uint64_t len;
};

void expect_records(const DecodedStream& d, const std::vector<Expected>& want) {
  ASSERT_EQ(d.error, "");
  ASSERT_EQ(d.records.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    EXPECT_EQ(d.records[i].header.size, RECORD_HEADER_SIZE_VER0);
    EXPECT_EQ(d.records[i].header.type, static_cast<std::uint32_t>(want[i].type));
    EXPECT_EQ(d.records[i].header.flags, 0u);
    EXPECT_EQ(d.records[i].header.offset, want[i].offset);
    EXPECT_EQ(d.records[i].header.len, want[i].len);
  }
}

TEST(CoreSource, PatternHasNonZeroDataPagesAndZeroHoles) {
  const auto core = CoreSource::pattern(4 * kPage + 10, 2, kPage, 7, /*data_last_page=*/true);
  const auto bytes = materialize(core);
  ASSERT_EQ(bytes.size(), 4 * kPage + 10);
  for (std::uint64_t i = 0; i < bytes.size(); ++i) {
    const std::uint64_t page = i / kPage;
    const bool data = page % 2 == 0 || page == 4;
    ASSERT_EQ(bytes[i] != std::byte{0}, data) << "offset " << i;
    if (data) {
      ASSERT_EQ(bytes[i], CoreSource::pattern_byte(i, 7));
    }
  }
}

TEST(CoreSource, ReadOutsideTheCoreFails) {
  const auto core = CoreSource::pattern(100);
  std::vector<std::byte> buf(10);
  std::string error;
  EXPECT_TRUE(core.read(90, buf, error));
  EXPECT_FALSE(core.read(91, buf, error));
  EXPECT_NE(error, "");
}

TEST(CoreSource, FileSourceReadsTheFile) {
  const std::string dir = testing::make_temp_dir();
  const std::string path = dir + "/core";
  const auto want = materialize(CoreSource::pattern(3 * kPage + 5, 0, kPage, 3));
  {
    ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(::write(fd.get(), want.data(), want.size()), static_cast<ssize_t>(want.size()));
  }
  std::string error;
  const auto core = CoreSource::from_file(path, error);
  ASSERT_TRUE(core.has_value()) << error;
  EXPECT_EQ(core->size(), want.size());
  EXPECT_EQ(materialize(*core), want);
  EXPECT_EQ(core->describe(), "file:" + path);
  EXPECT_FALSE(CoreSource::from_file(dir + "/missing", error).has_value());
  std::filesystem::remove_all(dir);
}

TEST(RecordsWriter, WithoutSparseEveryByteIsDataThenEnd) {
  const auto core = mixed_core();
  RecordsOptions o;
  o.max_data_len = 2 * kPage;
  const auto stream = encode_all(core, o);
  const auto d = decode_records(stream, /*sparse_acked=*/false);
  expect_records(d, {{RecordType::Data, 0, 2 * kPage},
                     {RecordType::Data, 2 * kPage, 2 * kPage},
                     {RecordType::Data, 4 * kPage, kPage + 100},
                     {RecordType::End, 5 * kPage + 100, 0}});
  EXPECT_TRUE(d.saw_end);
  EXPECT_EQ(d.core, materialize(core));
  EXPECT_GT(stream.size(), core.size());
}

TEST(RecordsWriter, SparseMergesZeroPagesAndKeepsThePartialTailAsData) {
  const auto core = mixed_core();
  RecordsOptions o;
  o.sparse = true;
  const auto stream = encode_all(core, o);
  const auto d = decode_records(stream, /*sparse_acked=*/true);
  expect_records(d, {{RecordType::Data, 0, kPage},
                     {RecordType::Zero, kPage, 3 * kPage},
                     {RecordType::Data, 4 * kPage, kPage + 100},
                     {RecordType::End, 5 * kPage + 100, 0}});
  EXPECT_EQ(d.core, materialize(core));
}

TEST(RecordsWriter, SparseCoreTouchedAtBothEndsIsSmallOnTheWire) {
  // the sparse case of docs/PROTOCOL.md §11.2 group F in miniature: 32 MiB, data only in the first and last page.
  const auto core = CoreSource::pattern(32ULL << 20, 1ULL << 40, kPage, 0, /*data_last_page=*/true);
  RecordsOptions o;
  o.sparse = true;
  const auto stream = encode_all(core, o);
  EXPECT_LT(stream.size(), core.size() / 8);
  const auto d = decode_records(stream, true);
  ASSERT_EQ(d.error, "");
  EXPECT_TRUE(d.saw_end);
  ASSERT_EQ(d.records.size(), 4u);  // DATA, ZERO, DATA, END
  EXPECT_EQ(d.core, materialize(core));
}

TEST(RecordsWriter, MaxDataLenIsRoundedDownToWholePages) {
  const auto core = CoreSource::pattern(3 * kPage);
  RecordsOptions o;
  o.max_data_len = kPage + 1000;
  const auto d = decode_records(encode_all(core, o), false);
  expect_records(d, {{RecordType::Data, 0, kPage},
                     {RecordType::Data, kPage, kPage},
                     {RecordType::Data, 2 * kPage, kPage},
                     {RecordType::End, 3 * kPage, 0}});
}

TEST(RecordsWriter, EmptyCoreIsJustEnd) {
  const auto d = decode_records(encode_all(CoreSource(), {}), false);
  expect_records(d, {{RecordType::End, 0, 0}});
}

TEST(RecordsWriter, LargerHeadersArePaddedWithZerosAndSkippedByTheReader) {
  const auto core = CoreSource::pattern(kPage + 7);
  RecordsOptions o;
  o.header_size = 48;
  const auto stream = encode_all(core, o);
  EXPECT_EQ(stream.size(), 48 + core.size() + 48);
  for (std::size_t i = 32; i < 48; ++i) EXPECT_EQ(stream[i], std::byte{0});
  const auto d = decode_records(stream, false);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.records.at(0).header.size, 48u);
  EXPECT_EQ(d.core, materialize(core));
}

TEST(RecordsWriter, WithoutEndTheStreamJustStops) {
  RecordsOptions o;
  o.send_end = false;
  const auto d = decode_records(encode_all(CoreSource::pattern(kPage), o), false);
  ASSERT_EQ(d.error, "");
  EXPECT_FALSE(d.saw_end);
  EXPECT_FALSE(d.partial_tail);
  EXPECT_EQ(d.records.size(), 1u);
}

TEST(RecordsWriter, FaultsReachTheWireAndTheReaderRefusesThem) {
  const auto core = CoreSource::pattern(4 * kPage);
  struct Case {
    RecordFault fault;
    std::string error_part;
  };
  const Case cases[] = {
      {{RecordFault::Kind::OffsetGap, 1, kPage}, "expected"},
      {{RecordFault::Kind::Type, 2, 7}, "unknown type 7"},
      {{RecordFault::Kind::Flags, 0, 1}, "non-zero flags"},
      {{RecordFault::Kind::HeaderSize, 0, 16}, "header size 16"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error_part);
    RecordsOptions o;
    o.max_data_len = kPage;
    o.faults = {c.fault};
    const auto d = decode_records(encode_all(core, o), false);
    EXPECT_NE(d.error.find(c.error_part), std::string::npos) << d.error;
  }
}

TEST(RecordsWriter, OffsetGapShiftsEveryLaterRecord) {
  RecordsOptions o;
  o.max_data_len = kPage;
  o.faults = {{RecordFault::Kind::OffsetGap, 1, 100}};
  const auto stream = encode_all(CoreSource::pattern(3 * kPage), o);
  std::vector<std::uint64_t> offsets;
  for (std::size_t at = 0; at < stream.size();) {
    RecordHeader h{};
    std::memcpy(&h, stream.data() + at, sizeof(h));
    offsets.push_back(h.offset);
    at += h.size + (h.type == 0 ? h.len : 0);
  }
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, kPage + 100, 2 * kPage + 100, 3 * kPage + 100}));
}

TEST(DecodeRecords, RefusesZeroWithoutSparseAndBytesAfterEnd) {
  RecordsOptions sparse;
  sparse.sparse = true;
  const auto stream = encode_all(mixed_core(), sparse);
  EXPECT_NE(decode_records(stream, false).error.find("ZERO record without SPARSE"), std::string::npos);

  auto trailing = encode_all(CoreSource::pattern(10), {});
  trailing.push_back(std::byte{0});
  EXPECT_NE(decode_records(trailing, false).error.find("bytes after END"), std::string::npos);
}

TEST(DecodeRecords, TruncatedStreamIsPartialWithoutError) {
  const auto stream = encode_all(CoreSource::pattern(2 * kPage), {});
  const auto d = decode_records(std::span(stream).first(32 + 100), false);
  EXPECT_EQ(d.error, "");
  EXPECT_FALSE(d.saw_end);
  EXPECT_TRUE(d.partial_tail);
  EXPECT_EQ(d.core.size(), 100u);
}

}  // namespace
}  // namespace coredumpd::fake_kernel
