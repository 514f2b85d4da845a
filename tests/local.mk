# Tests: unit tests of core, the rsocket conformance suite (parametrised
# over providers), and scripts driving external programs.
check_PROGRAMS += core_unit_tests
TESTS += core_unit_tests

include tests/librsocket/local.mk
include tests/ext/local.mk
include tests/rxe/local.mk
EXTRA_DIST += tests/common/stderr_capture.h
