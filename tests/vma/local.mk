# Unit tests of libvmacompat (one binary; each part adds its sources). Like
# core_unit_tests (Makefile.am): they reach the library's internals, so they
# link its objects and core's whole, ahead of the tests', and never load
# libslipstream.so or libvmacompat.so.
check_PROGRAMS += vma_unit_tests
TESTS += vma_unit_tests
vma_unit_tests_SOURCES =
vma_unit_tests_SOURCES += tests/vma/stats_test.cc
vma_unit_tests_SOURCES += tests/vma/rules_test.cc
vma_unit_tests_SOURCES += tests/vma/settings_test.cc
vma_unit_tests_SOURCES += tests/vma/ring_depth_test.cc
vma_unit_tests_SOURCES += tests/vma/extra_table_test.cc
vma_unit_tests_SOURCES += tests/vma/held_packets_test.cc
vma_unit_tests_SOURCES += tests/vma/xtreme_buffs_test.cc
vma_unit_tests_SOURCES += tests/vma/ring_logic_test.cc
vma_unit_tests_SOURCES += tests/vma/ring_turn_test.cc
# The preload's check of a program's memory (libinterpose's one file).
vma_unit_tests_SOURCES += tests/vma/program_memory_test.cc src/interpose/program_memory.cc
VMA_TEST_OBJECTS = $(libvmacompat_la_OBJECTS) $(libslipstream_core_la_OBJECTS)
vma_unit_tests_LDFLAGS = $(VMA_TEST_OBJECTS) $(AM_LDFLAGS)
EXTRA_vma_unit_tests_DEPENDENCIES = $(VMA_TEST_OBJECTS)
vma_unit_tests_LDADD = $(libslipstream_core_la_LIBADD) $(GTEST_LIBS)
TEST_LIMITS += vma_unit_tests=120
# The installed default libvma.conf is read from the source tree.
vma_unit_tests_CPPFLAGS = $(AM_CPPFLAGS) -DSRCDIR='"$(abs_top_srcdir)"'

# A process publishing known counters, for tests/ext/vma_stats.sh.
check_PROGRAMS += tests/vma/vma_stats_publisher
tests_vma_vma_stats_publisher_SOURCES = tests/vma/vma_stats_publisher.cc
tests_vma_vma_stats_publisher_LDFLAGS = $(VMA_TEST_OBJECTS) $(AM_LDFLAGS)
EXTRA_tests_vma_vma_stats_publisher_DEPENDENCIES = $(VMA_TEST_OBJECTS)
tests_vma_vma_stats_publisher_LDADD = $(libslipstream_core_la_LIBADD)
