// verify(): orphans, missing files, sizes, corrupt zstd, raw cores.
#include "store/verify.h"

#include <elf.h>

#include <cstring>

#include "store/record_extras.h"

#include "tests/unit/retention_fixture.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

TEST_F(RetentionTest, VerifyCleanStore) {
  add_sized(1, 1000, 100s, 10 * KiB);
  add(2, 1000, 90s, std::string(100000, 'x'));
  add(3, 1000, 80s, "", "", DumpState::Failed);
  add(4, 1000, 70s, "streaming", "", DumpState::InProgress);  // file linked, row not yet updated
  // A raw core linked while its row still says "<id>.zst" (the daemon updates the row after).
  add(5, 1000, 60s, "", "", DumpState::InProgress);
  ASSERT_EQ(::unlink((store_ + "/" + make_id(5) + ".zst").c_str()), 0);
  write_file(store_ + "/" + make_id(5) + ".core", "raw, row not yet updated");
  write_file(store_ + "/.partial-" + make_id(9) + ".zst", "half");
  const VerifyReport v = verify(*index_, dirfd_, true);
  EXPECT_TRUE(v.ok()) << v.issues[0].name << ": " << v.issues[0].detail;
  EXPECT_EQ(v.files, 4U);  // not index.sqlite*, not the dotfile
  EXPECT_EQ(v.cores, 2U);
  EXPECT_EQ(v.deep_checked, 2U);
}

// A well-compressible core whose size is a multiple of 128 KiB (zstd's block size and its
// streaming output buffer): the decoder's last output exactly fills the buffer, and a further call
// after the frame's end must not be taken for "ends in the middle of a zstd frame". Found with
// 40 MiB text cores from the daemon; the smallest such core is one block.
TEST_F(RetentionTest, VerifyDeepAcceptsCoresOfWholeZstdBlocks) {
  add(1, 1000, 100s, std::string(128 * KiB, 'a'));
  add(2, 1000, 90s, std::string(4 * 1024 * KiB, 'b'));
  add(3, 1000, 80s, std::string(40 * 1024 * KiB, '\0'));
  const VerifyReport v = verify(*index_, dirfd_, true);
  EXPECT_EQ(v.deep_checked, 3U);
  for (const auto& i : v.issues) ADD_FAILURE() << i.name << ": " << i.detail;
}

TEST_F(RetentionTest, VerifyFindsEveryKindOfProblem) {
  add_sized(1, 1000, 100s, 10 * KiB);             // fine
  add_sized(2, 1000, 90s, 10 * KiB);              // file deleted -> missing
  add_sized(3, 1000, 80s, 10 * KiB);              // file grown -> size mismatch
  add(4, 1000, 70s, std::string(200000, 'a') + random_bytes(1000, 4));  // corrupted -> deep only
  add(5, 1000, 60s, std::string(50000, 'b'));     // truncated mid-frame, index agrees on the size
  DumpRecord r6 = add(6, 1000, 50s, std::string(50000, 'c'));  // core_size wrong in the index
  write_file(store_ + "/" + make_id(7) + ".zst", "no row");     // orphan
  write_file(store_ + "/stray file\x1b[31m", "junk");           // orphan, hostile name

  ASSERT_EQ(::unlink((store_ + "/" + make_id(2) + ".zst").c_str()), 0);
  { std::ofstream(store_ + "/" + make_id(3) + ".zst", std::ios::binary | std::ios::app) << "x"; }
  {
    const std::string p = store_ + "/" + make_id(4) + ".zst";
    std::string z = read_file(p);
    z[z.size() / 2] = static_cast<char>(z[z.size() / 2] ^ 0x55);
    write_file(p, z);
  }
  {
    const std::string p = store_ + "/" + make_id(5) + ".zst";
    std::string z = read_file(p);
    z.resize(z.size() - 6);
    write_file(p, z);
    DumpRecord r5 = *index_->get(make_id(5));
    r5.stored_size = z.size();
    index_->update(r5);
  }
  r6.core_size += 1;
  index_->update(r6);

  const auto kinds = [](const VerifyReport& rep) {
    std::multiset<std::pair<std::string, std::string>> s;
    for (const auto& i : rep.issues) s.emplace(verify_problem_name(i.problem), i.name);
    return s;
  };
  const std::string n = ".zst";
  const VerifyReport shallow = verify(*index_, dirfd_, false);
  EXPECT_EQ(kinds(shallow), (std::multiset<std::pair<std::string, std::string>>{
                                {"missing", make_id(2) + n},
                                {"size_mismatch", make_id(3) + n},
                                {"orphan", make_id(7) + n},
                                {"orphan", "stray file\x1b[31m"},
                            }));
  EXPECT_EQ(shallow.deep_checked, 0U);

  const VerifyReport deep = verify(*index_, dirfd_, true);
  EXPECT_EQ(kinds(deep), (std::multiset<std::pair<std::string, std::string>>{
                             {"missing", make_id(2) + n},
                             {"size_mismatch", make_id(3) + n},
                             {"corrupt", make_id(4) + n},
                             {"corrupt", make_id(5) + n},
                             {"core_size_mismatch", make_id(6) + n},
                             {"orphan", make_id(7) + n},
                             {"orphan", "stray file\x1b[31m"},
                         }));
  for (const auto& i : deep.issues) {
    if (i.name == make_id(5) + n) {
      EXPECT_NE(i.detail.find("middle of a zstd frame"), std::string::npos) << i.detail;
    }
    if (i.name == make_id(7) + n) {
      EXPECT_EQ(i.detail, "no row in the index");
    }
  }
  // Vacuum left the file of a row it marked? verify says so (a failed unlink would look like this).
  RetentionLimits l;
  l.max_use_per_uid_bytes = 0;
  run_vacuum(l, "", false);
  write_file(store_ + "/" + make_id(1) + ".zst", "back again");
  const VerifyReport after = verify(*index_, dirfd_, false);
  bool found = false;
  for (const auto& i : after.issues) {
    if (i.name == make_id(1) + n) {
      found = true;
      EXPECT_EQ(i.problem, VerifyProblem::Orphan);
      EXPECT_NE(i.detail.find("vacuumed"), std::string::npos) << i.detail;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(RetentionTest, VerifyReadsRawCoresThrough) {
  add_raw(1, 1000, 100s, random_bytes(3 * MiB + 5, 1));  // more than one read
  add_raw(2, 1000, 90s, "ELF head", 2 * MiB, "tail");     // sparse
  add_raw(3, 1000, 80s, "");                              // an empty core
  add(4, 1000, 70s, std::string(100000, 'x'));            // a zstd one beside them
  DumpRecord t = add_raw(5, 1000, 60s, "cut short");      // truncated: the index agrees
  t.state = DumpState::Truncated;
  t.core_size = 1000;
  t.extra["stored_core_bytes"] = 9;
  index_->update(t);
  const VerifyReport v = verify(*index_, dirfd_, true);
  EXPECT_TRUE(v.ok()) << v.issues[0].name << ": " << v.issues[0].detail;
  EXPECT_EQ(v.files, 5U);
  EXPECT_EQ(v.cores, 5U);
  EXPECT_EQ(v.deep_checked, 5U);

  const CliResult cli = dumpctl({"verify", "--deep"});
  EXPECT_EQ(cli.rc, 0) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("Checked 5 files and 5 cores (5 read in full): no problems found."),
            std::string::npos)
      << cli.out;
}

TEST_F(RetentionTest, VerifyFindsProblemsOfRawCores) {
  add_raw(1, 1000, 100s, random_bytes(10 * KiB, 1));                 // fine
  add_raw(2, 1000, 90s, random_bytes(10 * KiB, 2));                  // cut short: size mismatch
  DumpRecord r3 = add_raw(3, 1000, 80s, random_bytes(10 * KiB, 3));  // core_size wrong: deep only
  add_raw(4, 1000, 70s, random_bytes(10 * KiB, 4));                  // file deleted: missing
  DumpRecord r5 = add_raw(5, 1000, 60s, "x");  // truncated, kept bytes wrong: deep only
  add(6, 1000, 50s, "", "", DumpState::Failed);                      // failed, yet a .core file
  DumpRecord r7 = add_raw(7, 1000, 40s, "still here");               // vacuumed, file left behind
  write_file(store_ + "/" + make_id(6) + ".core", "stray");
  write_file(store_ + "/" + make_id(8) + ".core", "no row");

  {
    const std::string p = store_ + "/" + make_id(2) + ".core";
    write_file(p, read_file(p).substr(0, 10 * KiB - 100));
  }
  r3.core_size += 1;
  index_->update(r3);
  ASSERT_EQ(::unlink((store_ + "/" + make_id(4) + ".core").c_str()), 0);
  r5.state = DumpState::Truncated;
  r5.core_size = 100;
  r5.extra["stored_core_bytes"] = 2;
  index_->update(r5);
  r7.extra["vacuumed"] = {{"reason", "max_use"}, {"time_us", 1}, {"path", r7.path},
                          {"stored_size", r7.stored_size}};
  r7.path.clear();
  index_->update(r7);

  using Found = std::multiset<std::pair<std::string, std::string>>;
  const auto kinds = [](const VerifyReport& rep) {
    Found s;
    for (const auto& i : rep.issues) s.emplace(verify_problem_name(i.problem), i.name);
    return s;
  };
  const std::string n = ".core";
  const Found shallow_want = {
      {"size_mismatch", make_id(2) + n}, {"missing", make_id(4) + n}, {"orphan", make_id(6) + n},
      {"orphan", make_id(7) + n},        {"orphan", make_id(8) + n},
  };
  EXPECT_EQ(kinds(verify(*index_, dirfd_, false)), shallow_want);
  Found deep_want = shallow_want;
  deep_want.emplace("core_size_mismatch", make_id(3) + n);
  deep_want.emplace("core_size_mismatch", make_id(5) + n);
  const VerifyReport deep = verify(*index_, dirfd_, true);
  EXPECT_EQ(kinds(deep), deep_want);
  EXPECT_EQ(deep.deep_checked, 3U);  // dumps 1, 3 and 5
  // The orphans' rows are found from their ".core" names: the details say what became of them.
  const std::map<std::string, std::string> details = {
      {make_id(2) + n, "10140 bytes on disk, the index says 10240"},
      {make_id(3) + n, "holds 10240 bytes, the index says 10241"},
      {make_id(4) + n, "complete dump's core file is not in the store"},
      {make_id(5) + n, "holds 1 bytes, the index says 2"},
      {make_id(6) + n, "row " + make_id(6) + " is failed and holds no core"},
      {make_id(7) + n, "row " + make_id(7) + " was vacuumed (max_use) but the file is still here"},
      {make_id(8) + n, "no row in the index"},
  };
  for (const auto& i : deep.issues) EXPECT_EQ(i.detail, details.at(i.name)) << i.name;
}

// A minimal x86_64 ELF core of `size` bytes (> 4096): header, [PT_NOTE, PT_LOAD], one CORE note,
// and memory from 4096 to `size`, which the PT_LOAD promises.
std::string elf_core(std::size_t size) {
  std::string core(size, '\x5a');
  const Elf64_Ehdr eh{.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
                      .e_type = ET_CORE, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_entry = 0,
                      .e_phoff = sizeof(Elf64_Ehdr), .e_shoff = 0, .e_flags = 0, .e_ehsize = sizeof(Elf64_Ehdr),
                      .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 2, .e_shentsize = 0, .e_shnum = 0,
                      .e_shstrndx = 0};  // no section headers
  const std::size_t notes_at = sizeof eh + 2 * sizeof(Elf64_Phdr);
  const Elf64_Nhdr nh{5, 4, NT_AUXV};
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = notes_at;
  note.p_filesz = sizeof nh + 8 + 4;  // header, "CORE\0" padded to 8, a 4-byte descriptor
  note.p_align = 4;
  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  load.p_offset = 4096;
  load.p_filesz = load.p_memsz = size - 4096;
  std::memcpy(core.data(), &eh, sizeof eh);
  std::memcpy(core.data() + sizeof eh, &note, sizeof note);
  std::memcpy(core.data() + sizeof eh + sizeof note, &load, sizeof load);
  std::memcpy(core.data() + notes_at, &nh, sizeof nh);
  std::memcpy(core.data() + notes_at + sizeof nh, "CORE\0\0\0\0\1\2\3\4", 12);
  return core;
}

// A short stream a daemon before the check recorded complete: deep verify finds it from the core's
// own program headers, for zstd and raw cores alike; a whole core, and a short core recorded
// truncated, are fine.
TEST_F(RetentionTest, VerifyDeepFindsShortCoresRecordedComplete) {
  const std::string whole = elf_core(256 * KiB);
  add(1, 1000, 100s, whole);                                // complete and whole
  add(2, 1000, 90s, whole.substr(0, 100 * KiB));            // complete, but 100 of 256 KiB
  DumpRecord r3 = add(3, 1000, 80s, whole.substr(0, 100 * KiB), "", DumpState::Truncated);
  r3.extra[extras::kStoredCoreBytes] = 100 * KiB;           // recorded as the fixed daemon does
  r3.extra[extras::kCoreExpectedBytes] = 256 * KiB;
  r3.extra[extras::kCoreReceivedBytes] = 100 * KiB;
  index_->update(r3);
  add_raw(4, 1000, 70s, whole.substr(0, 8192));             // raw, complete, 8 of 256 KiB
  add(5, 1000, 60s, std::string(50000, 'n'));               // not an ELF core: nothing promised

  const VerifyReport shallow = verify(*index_, dirfd_, false);
  EXPECT_TRUE(shallow.ok()) << "a short core is consistent on the surface";
  const VerifyReport deep = verify(*index_, dirfd_, true);
  ASSERT_EQ(deep.issues.size(), 2u);
  std::map<std::string, VerifyIssue> by_id;
  for (const auto& i : deep.issues) by_id[i.id] = i;
  ASSERT_TRUE(by_id.count(make_id(2)) && by_id.count(make_id(4)));
  EXPECT_EQ(by_id[make_id(2)].problem, VerifyProblem::ShortCore);
  EXPECT_EQ(by_id[make_id(2)].detail, "recorded complete, but its core holds " + std::to_string(100 * KiB) +
                                          " of the " + std::to_string(256 * KiB) +
                                          " bytes its program headers promise (the stream was cut short)");
  EXPECT_EQ(by_id[make_id(4)].problem, VerifyProblem::ShortCore);
  EXPECT_STREQ(verify_problem_name(VerifyProblem::ShortCore), "short_core");
}

}  // namespace
}  // namespace coredumpd
