#include "analysis/signature.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>

#include "store/dump_record.h"

namespace coredumpd::analysis {

namespace {

// Functions whose frames are the machinery of abort/assert/raise/fortify/C++ terminate: exact
// names after normalise() (parameter list and clone suffixes removed).
constexpr std::array<std::string_view, 27> kMachineryNames{
    "raise", "gsignal", "abort", "__assert_fail", "__assert_fail_base", "__assert_perror_fail",
    "__assert", "pthread_kill", "__pthread_kill_implementation", "__pthread_kill_internal",
    "__libc_message", "__libc_message_impl", "__fortify_fail", "__chk_fail", "__stack_chk_fail",
    "__stack_chk_fail_local", "malloc_printerr", "std::terminate", "std::__terminate",
    "__cxxabiv1::__terminate", "__cxa_throw", "__cxa_rethrow", "__cxa_call_terminate",
    "__gnu_cxx::__verbose_terminate_handler", "__cxa_pure_virtual", "__cxa_deleted_virtual",
    "std::abort"};

// Prefixes of glibc's internal aliases and of the sanitizers' runtimes (C++ namespaces, their C
// entry points and interceptors).
constexpr std::array<std::string_view, 16> kMachineryPrefixes{
    "__GI_", "__interceptor_", "___interceptor_", "__sanitizer::", "__asan::", "__ubsan::",
    "__tsan::", "__lsan::", "__msan::", "__sanitizer_", "__asan_", "__ubsan_", "__tsan_",
    "__lsan_", "__msan_", "__interception::"};

// GCC's clone suffixes: the same source function is "f.isra.0" in one build and "f" in another.
constexpr std::array<std::string_view, 6> kCloneSuffixes{".isra.", ".constprop.", ".part.", ".cold",
                                                         ".lto_priv.", ".localalias"};

/// `function` without what varies between builds of the same code: a demangler's " [clone ...]"
/// and GCC's ".isra.N"/".constprop.N"/".part.N"/".cold" suffixes.
std::string normalise(std::string_view function) {
  if (const auto clone = function.find(" [clone "); clone != std::string_view::npos) {
    function = function.substr(0, clone);
  }
  for (;;) {
    std::size_t cut = std::string_view::npos;
    for (const auto suffix : kCloneSuffixes) {
      const auto at = function.rfind(suffix);
      // Only a suffix: what follows is digits (or nothing), never a '(' or "::".
      if (at == std::string_view::npos || at == 0) continue;
      const auto rest = function.substr(at + suffix.size());
      if (rest.find_first_not_of("0123456789.") != std::string_view::npos) continue;
      cut = std::min(cut, at);
    }
    if (cut == std::string_view::npos) break;
    function = function.substr(0, cut);
  }
  return std::string(function);
}

/// The name without its parameter list: "std::terminate()" -> "std::terminate".
std::string_view bare_name(std::string_view function) {
  const auto paren = function.find('(');
  return paren == std::string_view::npos ? function : function.substr(0, paren);
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

bool is_machinery_frame(const Frame& frame) {
  if (frame.function.empty()) return false;
  const std::string name = normalise(frame.function);
  const std::string_view bare = bare_name(name);
  for (const auto m : kMachineryNames) {
    if (bare == m) return true;
  }
  for (const auto p : kMachineryPrefixes) {
    if (bare.starts_with(p)) return true;
  }
  return false;
}

std::string frame_key(const Frame& frame) {
  if (!frame.function.empty()) return normalise(frame.function);
  if (!frame.module.empty()) return frame.module + "+" + hex(frame.module_offset);
  return hex(frame.pc);
}

std::optional<Signature> make_signature(const Thread& crashed, std::optional<int> signal) {
  if (crashed.frames.empty()) return std::nullopt;
  std::size_t first = 0;
  while (first < crashed.frames.size() && is_machinery_frame(crashed.frames[first])) ++first;
  // Only machinery (an unwind that stopped inside abort()): sign what there is rather than nothing.
  if (first == crashed.frames.size()) first = 0;

  Signature sig;
  sig.text = (signal ? signal_name(*signal) : std::string("SIG?")) + ":";
  for (std::size_t i = first; i < crashed.frames.size() && i < first + kSignatureFrames; ++i) {
    sig.text += (i == first ? " " : " | ") + frame_key(crashed.frames[i]);
  }

  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int md_len = 0;
  if (EVP_Digest(sig.text.data(), sig.text.size(), md.data(), &md_len, EVP_sha256(), nullptr) != 1 ||
      md_len < 16) {
    return std::nullopt;  // libcrypto without SHA-256 (a FIPS misconfiguration): no signature
  }
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < 16; ++i) {
    sig.hash.push_back(kHex[md[i] >> 4]);
    sig.hash.push_back(kHex[md[i] & 0xf]);
  }
  return sig;
}

}  // namespace coredumpd::analysis
