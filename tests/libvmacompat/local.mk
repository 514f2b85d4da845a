# libvmacompat's unit tests. The library exports nothing (the preload will
# link it), so the sources under test are compiled in; core's logging comes
# from libslipstream.so as it does for the library.
check_PROGRAMS += vmacompat_unit_tests
TESTS += vmacompat_unit_tests
vmacompat_unit_tests_SOURCES = \
	tests/libvmacompat/extra_table_test.cc \
	src/libvmacompat/extra_table.cc
vmacompat_unit_tests_LDADD = libslipstream.la $(GTEST_LIBS)
TEST_LIMITS += vmacompat_unit_tests=60
