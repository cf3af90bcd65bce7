# Debian package (CPack DEB). Included last from the top CMakeLists.txt; build it with
# packaging/build-deb.sh, which configures with CMAKE_INSTALL_PREFIX=/usr: the unit's ExecStart= and
# --config paths are fixed at configure time, so a package from a /usr/local tree would be broken.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "CPack DEB: install prefix is ${CMAKE_INSTALL_PREFIX}; packages need /usr (use packaging/build-deb.sh)")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME coredumpd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "coredump server for the Linux core_pattern socket protocol")
# The long description; CPack puts the summary above it.
# Lines under 80 columns (lintian: extended-description-line-too-long).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "coredumpd receives core dumps over kernel.core_pattern=@@SOCKET
(Linux 6.17+), records metadata from /proc while the task is frozen, and
stores zstd-compressed cores with an index. dumpctl lists, shows, extracts
and debugs them.")
# The project's own address (the one its commits carry); Debian's Maintainer: field.
set(CPACK_PACKAGE_CONTACT "coredumpd maintainers <maintainers@users.noreply.a-seed-29e6dac2.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # coredumpd_<version>_<arch>.deb
set(CPACK_STRIP_FILES TRUE)  # RelWithDebInfo binaries are ~10x larger with their debug info
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends= from the binaries' real NEEDED libraries (dpkg-shlibdeps): libzstd1, libsqlite3-0,
# libsystemd0, libarchive13 (dumpctl export), libspdlog, libfmt, libstdc++6, ... exactly what this build links.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The units and the tmpfiles.d entry need systemd to mean anything; gdb is `dumpctl debug`.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd (>= 252)")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "gdb")
# Both programs take core_pattern (systemd-coredump's sysctl.d file would set its own at every boot).
set(CPACK_DEBIAN_PACKAGE_CONFLICTS "systemd-coredump")
# conffiles: dpkg keeps local edits of /etc/coredumpd/coredumpd.json across upgrades.
# Maintainer scripts: enable --now the sockets (coredumpd.socket then sets core_pattern, where the
# kernel supports it); on removal restore the previous pattern and stop them.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/conffiles ${CMAKE_CURRENT_LIST_DIR}/postinst
    ${CMAKE_CURRENT_LIST_DIR}/prerm ${CMAKE_CURRENT_LIST_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)  # scripts 0755, conffiles 0644
# The Debian changelog (packaging/changelog, its first entry's version = PROJECT_VERSION: build-deb.sh
# checks). A native package (no Debian revision in the version) carries it as changelog.gz, which
# lintian requires; gzip -9n as dh_compress does (no name or time stamp: reproducible).
find_program(GZIP gzip REQUIRED)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/changelog.gz
                   COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
                   COMMAND ${GZIP} -9nc ${CMAKE_CURRENT_LIST_DIR}/changelog > ${CMAKE_BINARY_DIR}/packaging/changelog.gz
                   DEPENDS ${CMAKE_CURRENT_LIST_DIR}/changelog VERBATIM)
add_custom_target(package-changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/packaging/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Each override says why (packaging/lintian-overrides); lintian reads them from here.
install(FILES ${CMAKE_CURRENT_LIST_DIR}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME coredumpd)
include(CPack)
