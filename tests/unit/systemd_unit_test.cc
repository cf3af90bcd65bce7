// systemd's view of a cgroup path (systemd_unit.h): units, slices, user units, and the host.
#include <gtest/gtest.h>

#include "tests/unit/container_test_util.h"

using namespace coredumpd;
using namespace coredumpd::container_test;

TEST(SystemdUnescape, HexEscapesOnly) {
  EXPECT_EQ(systemd_unescape("my\\x2dbox"), "my-box");
  EXPECT_EQ(systemd_unescape("\\x2e\\x2D\\x41"), ".-A");
  EXPECT_EQ(systemd_unescape("a\\x"), "a\\x");
  EXPECT_EQ(systemd_unescape("a\\x2"), "a\\x2");
  EXPECT_EQ(systemd_unescape("a\\xzz"), "a\\xzz");
  EXPECT_EQ(systemd_unescape("nul\\x00kept"), "nul\\x00kept");
  EXPECT_EQ(systemd_unescape("\\xff"), "\xff");
  EXPECT_EQ(systemd_unescape(""), "");
}

// ---------------------------------------------------------------------------------------------
// plain systemd

TEST(Systemd, ServiceSessionUserUnitAndInit) {
  for (const auto& c : all_layouts("/system.slice/nginx.service")) {
    EXPECT_EQ(c.runtime, Runtime::Systemd);
    EXPECT_EQ(c.unit, "nginx.service");
    EXPECT_EQ(c.slice, "system.slice");
    EXPECT_FALSE(c.in_container);
    EXPECT_EQ(container_key(c), "systemd:nginx.service");
  }
  const auto nested = ident(unified("/system.slice/system-getty.slice/getty@tty1.service"));
  EXPECT_EQ(nested.unit, "getty@tty1.service");
  EXPECT_EQ(nested.slice, "system-getty.slice");

  const auto session = ident(hybrid("/user.slice/user-1000.slice/session-3.scope"));
  EXPECT_EQ(session.runtime, Runtime::Systemd);
  EXPECT_EQ(session.unit, "session-3.scope");
  EXPECT_EQ(session.slice, "user-1000.slice");
  EXPECT_EQ(session.owner_uid, 1000);
  EXPECT_EQ(session.user_unit, "");

  const auto app = ident(unified("/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/"
                                 "vte-spawn-5f1b.scope"));
  EXPECT_EQ(app.unit, "user@1000.service");
  EXPECT_EQ(app.user_slice, "app-org.gnome.Terminal.slice");
  EXPECT_EQ(app.user_unit, "vte-spawn-5f1b.scope");
  EXPECT_EQ(app.owner_uid, 1000);

  const auto init = ident(unified("/init.scope"));
  EXPECT_EQ(init.unit, "init.scope");
  EXPECT_EQ(init.slice, "-.slice");

  // Slices alone: a slice but no unit, so not "systemd".
  const auto slices = ident(unified("/user.slice/user-0.slice"));
  EXPECT_EQ(slices.runtime, Runtime::None);
  EXPECT_EQ(slices.slice, "user-0.slice");
  EXPECT_EQ(slices.owner_uid, 0);
  EXPECT_EQ(container_key(slices), "host");
}

TEST(Host, RootCgroupIsTheHost) {
  for (const auto& text : {hybrid("/"), legacy("/"), unified("/"), std::string()}) {
    ContainerInputs in;
    in.cgroup = text;
    in.namespaces = host_ns();
    in.host_namespaces = host_ns();
    const auto c = identify_container(in);
    EXPECT_EQ(c.runtime, Runtime::None);
    EXPECT_FALSE(c.in_container);
    EXPECT_EQ(container_key(c), "host");
  }
}
