# Which Linux uapi headers the build compiles against, and what they declare.
#
# COREDUMPD_KERNEL_HEADERS (a path, e.g. what scripts/fetch-kernel-headers.sh prints) puts a private
# linux-libc-dev's usr/include, and its <multiarch triplet>/ folder for asm/, before the system's for
# every target: CI builds once against headers newer than the host's.
#
# <linux/coredump.h> (6.17+) declares its flags and sizes as enum constants, so `#ifdef` cannot see
# them; compile checks do. Each one found becomes a definition for every target:
#   COREDUMPD_HAVE_UAPI_COREDUMP_H             the header exists (protocol/wire.h includes it and
#                                              checks its values against ours)
#   COREDUMPD_HAVE_UAPI_COREDUMP_CLOSE_FILES   COREDUMP_CLOSE_FILES is declared (RFC, not in 7.3)
#   COREDUMPD_HAVE_UAPI_COREDUMP_REQ_SIZE_VER1 the VER1 series is (linux-next, not in 7.3)
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

set(COREDUMPD_KERNEL_HEADERS "" CACHE PATH
    "A linux-libc-dev usr/include searched before the system's (empty: the system's only)")

set(_coredumpd_uapi_dirs)
if(COREDUMPD_KERNEL_HEADERS)
  if(NOT EXISTS "${COREDUMPD_KERNEL_HEADERS}/linux/types.h")
    message(FATAL_ERROR "COREDUMPD_KERNEL_HEADERS=${COREDUMPD_KERNEL_HEADERS} holds no linux/types.h")
  endif()
  if(CMAKE_LIBRARY_ARCHITECTURE AND IS_DIRECTORY "${COREDUMPD_KERNEL_HEADERS}/${CMAKE_LIBRARY_ARCHITECTURE}")
    list(APPEND _coredumpd_uapi_dirs "${COREDUMPD_KERNEL_HEADERS}/${CMAKE_LIBRARY_ARCHITECTURE}")
  endif()
  list(APPEND _coredumpd_uapi_dirs "${COREDUMPD_KERNEL_HEADERS}")
  # SYSTEM: -isystem comes before the standard directories and keeps the kernel's own style out of
  # our warnings, as for /usr/include.
  include_directories(BEFORE SYSTEM ${_coredumpd_uapi_dirs})
  message(STATUS "Kernel uapi headers: ${COREDUMPD_KERNEL_HEADERS}")
endif()

# Names the spec expects from later kernels: CLOSE_FILES (an RFC; its value is taken from the header
# when declared) and REQ_SIZE_VER1, which stands for the linux-next series that brings the VER1
# structs with RECORDS, SPARSE and MEMORY_TYPES (protocol/wire.h checks them all against ours).
set(_coredumpd_uapi_optional COREDUMP_CLOSE_FILES COREDUMP_REQ_SIZE_VER1)

# The checks' results are cached; a different header directory must run them again.
if(NOT "${COREDUMPD_KERNEL_HEADERS}" STREQUAL "${_COREDUMPD_CHECKED_KERNEL_HEADERS}")
  unset(COREDUMPD_HAVE_UAPI_COREDUMP_H CACHE)
  foreach(_name IN LISTS _coredumpd_uapi_optional)
    unset(COREDUMPD_HAVE_UAPI_${_name} CACHE)
  endforeach()
  set(_COREDUMPD_CHECKED_KERNEL_HEADERS "${COREDUMPD_KERNEL_HEADERS}" CACHE INTERNAL "")
endif()

set(CMAKE_REQUIRED_INCLUDES ${_coredumpd_uapi_dirs})
set(CMAKE_REQUIRED_QUIET ON)
check_cxx_source_compiles([[
#include <linux/coredump.h>
int main() { return sizeof(struct coredump_req) >= 16 && sizeof(struct coredump_ack) >= 16 ? 0 : 1; }
]] COREDUMPD_HAVE_UAPI_COREDUMP_H)
set(_coredumpd_uapi_found)
if(COREDUMPD_HAVE_UAPI_COREDUMP_H)
  add_compile_definitions(COREDUMPD_HAVE_UAPI_COREDUMP_H=1)
  foreach(_name IN LISTS _coredumpd_uapi_optional)
    check_cxx_source_compiles("
#include <linux/coredump.h>
int main() { unsigned long long v = ${_name}; return v == 0; }
" COREDUMPD_HAVE_UAPI_${_name})
    if(COREDUMPD_HAVE_UAPI_${_name})
      add_compile_definitions(COREDUMPD_HAVE_UAPI_${_name}=1)
      list(APPEND _coredumpd_uapi_found ${_name})
    endif()
  endforeach()
  if(NOT _coredumpd_uapi_found)
    set(_coredumpd_uapi_found "none")
  endif()
  list(JOIN _coredumpd_uapi_found ", " _coredumpd_uapi_found)
  message(STATUS "<linux/coredump.h>: found; optional names it declares: ${_coredumpd_uapi_found}")
else()
  message(STATUS "<linux/coredump.h>: not found (linux-libc-dev older than 6.17); protocol/wire.h stands alone")
endif()
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_QUIET)
