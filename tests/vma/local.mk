# Unit tests of libvmacompat (libvma.conf, the VMA_* settings). Like
# core_unit_tests (Makefile.am): they reach the library's internals, so they
# link its objects and core's whole, ahead of the tests', and never load
# libslipstream.so or libvmacompat.so.
check_PROGRAMS += vma_unit_tests
TESTS += vma_unit_tests
vma_unit_tests_SOURCES =
vma_unit_tests_SOURCES += tests/vma/rules_test.cc
vma_unit_tests_SOURCES += tests/vma/settings_test.cc
VMA_UNIT_LINK_OBJECTS = $(libslipstream_core_la_OBJECTS) $(libvmacompat_la_OBJECTS)
vma_unit_tests_LDFLAGS = $(VMA_UNIT_LINK_OBJECTS) $(AM_LDFLAGS)
EXTRA_vma_unit_tests_DEPENDENCIES = $(VMA_UNIT_LINK_OBJECTS)
vma_unit_tests_LDADD = $(libslipstream_core_la_LIBADD) $(GTEST_LIBS)
TEST_LIMITS += vma_unit_tests=120
# The installed default libvma.conf is read from the source tree.
vma_unit_tests_CPPFLAGS = $(AM_CPPFLAGS) -DSRCDIR='"$(abs_top_srcdir)"'
