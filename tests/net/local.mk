# core/net's NetlinkView against the kernel, in two network namespaces
# joined by veth that the tests make and remove. Needs root (exit 77,
# skipped, otherwise). Linked with core's objects, as core_unit_tests is.
check_PROGRAMS += net_netns_tests
TESTS += net_netns_tests
net_netns_tests_SOURCES = \
	tests/common/netns_pair.h \
	tests/common/netns_pair.cc \
	tests/net/netlink_view_test.cc
net_netns_tests_LDFLAGS = $(libslipstream_core_la_OBJECTS) $(AM_LDFLAGS)
EXTRA_net_netns_tests_DEPENDENCIES = $(libslipstream_core_la_OBJECTS)
net_netns_tests_LDADD = $(libslipstream_core_la_LIBADD) -lgtest $(PTHREAD_LIBS)
