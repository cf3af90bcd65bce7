// A crash signature: which crashes are "the same bug". As fleet crash servers (Socorro, ABRT/FAF,
// Sentry) do, it is made from the crashing thread's top frames, normalised and skipping the frames
// of the abort/assert/sanitizer machinery, plus the signal; its hash is stored in the index.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "analysis/crash_report.h"

namespace coredumpd::analysis {

/// Frames of the crashing thread that make the signature (after skipping machinery frames).
inline constexpr std::size_t kSignatureFrames = 5;

/// A signature: `text`, the normalised frames ("SIGABRT: check_config | main | __libc_start_call_main"),
/// and `hash`, 32 lower-case hex characters of SHA-256(text) (OpenSSL), stable across hosts and
/// releases of coredumpd.
struct Signature {
  std::string hash;
  std::string text;
};

/// True for a frame of the machinery that turns a bug into a signal, which says nothing about the
/// bug: raise, abort, __assert_fail, pthread_kill, __GI_*, __libc_message, __fortify_fail,
/// __stack_chk_fail, std::terminate, __cxa_throw, __sanitizer::*, __asan::*, __ubsan::*, __tsan::*.
bool is_machinery_frame(const Frame& frame);
/// One frame's normalised form: "function" when symbolised (the module left out, so a crash keeps
/// its signature when a library moves), "module+0x<offset>" when not, "0x<pc>" outside any module.
std::string frame_key(const Frame& frame);
/// The signature of `crashed` (the crashing thread) and `signal` (SIGnn name; "SIG?" if unknown):
/// the first kSignatureFrames frames after the leading machinery frames. std::nullopt when the
/// thread has no frame.
std::optional<Signature> make_signature(const Thread& crashed, std::optional<int> signal);

}  // namespace coredumpd::analysis
